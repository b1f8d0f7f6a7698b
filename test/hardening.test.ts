/**
 * Regression tests for the review's findings: each names what broke.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

type Script = (write: (chunk: object) => void, end: () => void) => void;

/** An upstream whose stream is scripted per test, by model name. */
async function startScripted(scripts: Record<string, Script>): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { model: string };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const write = (chunk: object) =>
        res.write(
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: body.model, ...chunk })}\n\n`,
        );
      scripts[body.model]!(write, () => res.end('data: [DONE]\n\n'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

const delta = (d: object, finish: string | null = null) => ({
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});

describe('hardening', () => {
  let upstream: { url: string; server: Server };
  let gw: TestGateway;
  let accountId: string;
  let key: string;
  const timers: NodeJS.Timeout[] = [];

  beforeAll(async () => {
    upstream = await startScripted({
      // A reasoning model thinks for longer than first_token_ms before any text.
      thinker: (write, end) => {
        write(delta({ role: 'assistant', content: '' }));
        let n = 0;
        const tick = setInterval(() => {
          write(delta({ reasoning: `step ${n} ` }));
          if (++n === 8) {
            clearInterval(tick);
            write(delta({ content: 'answer' }, 'stop'));
            write({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 20, total_tokens: 25 } });
            end();
          }
        }, 150);
        timers.push(tick);
      },
      // The whole answer and its finish reason, then silence without usage or [DONE].
      'finish-then-stall': (write) => {
        write(delta({ role: 'assistant', content: '' }));
        write(delta({ content: 'complete answer' }, 'stop'));
      },
    });
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'scripted',
          name: 'Scripted',
          kind: 'openai',
          base_url: upstream.url,
          timeouts: { connect_ms: 1000, first_token_ms: 500, idle_ms: 600 },
        });
        for (const id of ['thinker', 'finish-then-stall']) {
          file.models.push({
            id: `test/${id}`,
            name: id,
            context_length: 4096,
            endpoints: [{ provider: 'scripted', model: id, pricing: { prompt: '0.000001', completion: '0.000002' } }],
          });
        }
      },
    });
    accountId = await gw.createAccount(5);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(async () => {
    for (const t of timers) clearInterval(t);
    await gw.close();
    upstream.server.closeAllConnections();
    await new Promise((resolve) => upstream.server.close(resolve));
  });

  it('reasoning deltas are content: they commit the attempt (no first-token timeout) and reach the caller as they come', async () => {
    const sse = await chatStream(gw, key, { model: 'test/thinker', messages: [{ role: 'user', content: 'think' }] });
    expect(sse.status).toBe(200);
    const reasoning = sse.events
      .flatMap((e) => (e.choices ?? []).map((c: { delta: { reasoning?: string } }) => c.delta.reasoning ?? ''))
      .join('');
    expect(reasoning).toContain('step 7');
    expect(sse.events.at(-1).usage.completion_tokens).toBe(20);
    expect(sse.done).toBe(true);
  });

  it('a stream that stalls after its finish reason is finalised as complete, not as an error', async () => {
    const sse = await chatStream(gw, key, {
      model: 'test/finish-then-stall',
      messages: [{ role: 'user', content: 'x' }],
    });
    const finishes = sse.events
      .flatMap((e) => (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason))
      .filter(Boolean);
    expect(finishes).toEqual(['stop']);
    expect(sse.events.some((e) => e.error)).toBe(false);
    expect(sse.events.at(-1).usage.cost).toBeGreaterThan(0);
    expect(sse.done).toBe(true);
  });

  it('max_tokens 0 is refused (a provider default would escape the credit hold)', async () => {
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      const refused = await chat(gw, key, {
        model: 'test/chat',
        [field]: 0,
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(refused.status).toBe(400);
      expect(refused.json.error.message).toContain(field);
    }
  });

  it('max_price takes float noise in numbers and refuses over-precise strings with 400, never 500', async () => {
    const ok = await chat(gw, key, {
      model: 'test/chat',
      provider: { max_price: { prompt: 0.1 + 0.2 + 1, completion: 100 } },
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(ok.status).toBe(200);
    const refused = await chat(gw, key, {
      model: 'test/chat',
      provider: { max_price: { prompt: '0.1234567891' } },
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(refused.status).toBe(400);
  });

  it('a free fallback model counts against the free-model limits', async () => {
    const before = (await getJson(gw, '/key', key)).json.data.free_model_daily_requests.used as number;
    const answer = await chat(gw, key, {
      model: 'test/server-error',
      models: ['test/chat:free'],
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(answer.status).toBe(200);
    expect(answer.json.model).toBe('test/chat:free');
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests.used).toBe(before + 1);
  });

  it('a key reported compromised cannot be re-enabled and never authenticates again', async () => {
    const victim = await gw.createKey(accountId);
    const manager = (await gw.createKey(accountId, { management: true })).key;
    expect((await gw.admin('POST', `/keys/${victim.hash}/compromised`, {})).status).toBe(200);
    const reenable = await request(`${gw.api}/keys/${victim.hash}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ disabled: false }),
    });
    expect(reenable.statusCode).toBe(409);
    await reenable.body.dump();
    expect((await gw.admin('PATCH', `/keys/${victim.hash}`, { disabled: false })).status).toBe(409);
    expect((await getJson(gw, '/key', victim.key)).status).toBe(401);
  });

  it('metrics labels come from the catalog, not from what a caller sends', async () => {
    const junk = `junk-${'x'.repeat(5000)}`;
    await chat(gw, key, { model: junk, messages: [{ role: 'user', content: 'x' }] });
    const metrics = await request(`${gw.url}/metrics`);
    const text = await metrics.body.text();
    expect(text).not.toContain(junk.slice(0, 100));
    expect(text).toContain('model="unknown"');
  });
});

describe('edge guard', () => {
  it('cannot be bypassed with a percent-encoded path', async () => {
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => ((file as { limits?: unknown }).limits = { edge: { burst: 5, per_second: 1 } }),
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const response = await request(`${gw.url}/%61pi/v1/providers`);
        await response.body.dump();
        statuses.push(response.statusCode);
      }
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(6);
      const health = await request(`${gw.url}/healthz`);
      await health.body.dump();
      expect(health.statusCode).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
