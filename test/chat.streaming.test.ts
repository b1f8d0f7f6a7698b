/**
 * POST /chat/completions with `stream: true` (docs/api.md): the SSE framing, keep-alive comments,
 * the usage chunk and `[DONE]`, in-band errors when the upstream dies after the first byte, real
 * HTTP statuses before it, and a caller that leaves mid-stream (docs/architecture.md "The request path", step 8).
 */
import { request as httpRequest } from 'node:http';
import { countTokens } from 'gpt-tokenizer';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, mockCompletionText } from '../src/providers/mock-server.js';
import {
  balanceUnits,
  chat,
  chatStream,
  getJson,
  startTestGateway,
  toUnits,
  waitForGeneration,
  type SseResult,
  type TestGateway,
} from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Tell me about the fox.' }];
const PROMPT_UNITS = 1000;
const COMPLETION_UNITS = 2000;

const SLOW_RATE_LIMITED = {
  id: 'test/slow-rate-limited',
  name: 'slow-rate-limited',
  context_length: 8192,
  endpoints: [
    {
      provider: 'mock',
      model: 'mock@status=429,retryAfter=7,latency=1000',
      pricing: { prompt: '0.000001', completion: '0.000002' },
    },
  ],
};

function contentOf(s: SseResult): string {
  return s.events
    .map((e) =>
      (e.choices ?? [])
        .map((c: { delta?: { content?: unknown } }) => (typeof c.delta?.content === 'string' ? c.delta.content : ''))
        .join(''),
    )
    .join('');
}

function finishReasons(s: SseResult): unknown[] {
  return s.events.flatMap((e) => (e.choices ?? []).map((c: { finish_reason: unknown }) => c.finish_reason));
}

/** The stream ended in exactly one in-band error chunk followed by `[DONE]`, never a `stop`. */
function expectInBandError(s: SseResult) {
  expect(s.status).toBe(200);
  expect(s.done).toBe(true);
  expect(s.raw.endsWith('data: [DONE]\n\n')).toBe(true);
  const last = s.events.at(-1);
  expect(last.object).toBe('chat.completion.chunk');
  expect(last.id).toBe(s.headers['x-generation-id']);
  expect(last.choices).toHaveLength(1);
  expect(last.choices[0]).toMatchObject({ index: 0, delta: { content: '' }, finish_reason: 'error' });
  expect(Number.isInteger(last.error.code)).toBe(true);
  expect(typeof last.error.message).toBe('string');
  expect(typeof last.error.metadata.error_type).toBe('string');
  expect(s.events.filter((e) => e.error !== undefined)).toHaveLength(1);
  expect(finishReasons(s)).not.toContain('stop');
  return last.error as { code: number; message: string; metadata: { error_type: string; provider_code?: unknown } };
}

describe('POST /chat/completions (streaming)', () => {
  let gw: TestGateway;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, extraModels: [SLOW_RATE_LIMITED] });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(() => gw.close());

  it('streams §2.4 chunks: one id, explicit null finish_reason, finish, one usage chunk, [DONE]', async () => {
    const s = await chatStream(gw, key, { model: 'test/chat', messages: MESSAGES });
    expect(s.status, s.raw).toBe(200);
    expect(String(s.headers['content-type'])).toMatch(/^text\/event-stream/);
    expect(s.headers['cache-control']).toBe('no-store');
    const id = s.headers['x-generation-id'];
    expect(id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);

    // Framing: only `data:` events and comments, each event terminated by a blank line, [DONE] last.
    for (const line of s.raw.split('\n'))
      expect(line === '' || line.startsWith('data: ') || line.startsWith(':'), line).toBe(true);
    expect(s.done).toBe(true);
    expect(s.raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(s.raw.match(/data: \[DONE\]/g)).toHaveLength(1);

    for (const e of s.events) {
      expect(e.id).toBe(id);
      expect(e.object).toBe('chat.completion.chunk');
      expect(e.model).toBe('test/chat');
      expect(e.provider).toBe('Mock');
      expect(Number.isInteger(e.created)).toBe(true);
    }

    const finishIndex = s.events.findIndex((e) =>
      e.choices.some((c: { finish_reason: unknown }) => c.finish_reason !== null),
    );
    expect(finishIndex).toBeGreaterThan(0);
    expect(s.events[finishIndex].choices[0].finish_reason).toBe('stop');
    for (const e of s.events.slice(0, finishIndex)) {
      expect(e.choices).toHaveLength(1);
      expect(e.choices[0]).toHaveProperty('finish_reason', null); // present and null, never omitted
    }

    const usageChunks = s.events.filter((e) => e.usage !== undefined);
    expect(usageChunks).toHaveLength(1);
    expect(s.events.indexOf(usageChunks[0])).toBe(finishIndex + 1);
    expect(finishIndex + 2).toBe(s.events.length);
    const usageChunk = usageChunks[0];
    expect(usageChunk.choices).toEqual([]);

    const promptTokens = countPromptTokens(MESSAGES, (text) => countTokens(text));
    expect(usageChunk.usage).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: 40,
      total_tokens: promptTokens + 40,
      is_byok: false,
    });
    expect(usageChunk.usage.cost).toBe((promptTokens * PROMPT_UNITS + 40 * COMPLETION_UNITS) / 1e9);

    expect(contentOf(s)).toBe(mockCompletionText(40));
    const g = await getJson(gw, `/generation?id=${id}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data).toMatchObject({
      streamed: true,
      cancelled: false,
      finish_reason: 'stop',
      tokens_completion: 40,
      usage_estimated: false,
    });
    expect(g.json.data.total_cost).toBe(usageChunk.usage.cost);
  });

  it('streams the same content and usage as the non-streamed answer to the same request', async () => {
    const body = { model: 'test/chat', messages: MESSAGES, max_tokens: 17 };
    const [s, j] = await Promise.all([chatStream(gw, key, body), chat(gw, key, body)]);
    expect(s.status).toBe(200);
    expect(j.status).toBe(200);
    expect(contentOf(s)).toBe(j.json.choices[0].message.content);
    const usage = s.events.at(-1).usage;
    expect(usage.prompt_tokens).toBe(j.json.usage.prompt_tokens);
    expect(usage.completion_tokens).toBe(j.json.usage.completion_tokens);
    expect(usage.cost).toBe(j.json.usage.cost);
    expect(finishReasons(s)).toContain(j.json.choices[0].finish_reason);
  });

  it('sends ": TOLLGATE PROCESSING" comments while waiting for the first token', async () => {
    const s = await chatStream(gw, key, { model: 'test/slow-first-token', messages: MESSAGES });
    expect(s.status).toBe(200);
    // 700 ms to the first token with a 200 ms keep-alive interval.
    expect(s.comments.length).toBeGreaterThanOrEqual(1);
    for (const comment of s.comments) expect(comment).toBe(': TOLLGATE PROCESSING');
    expect(s.raw.indexOf(': TOLLGATE PROCESSING\n\n')).toBeLessThan(s.raw.indexOf('data: '));
    expect(s.raw).not.toMatch(/data:\s*:?\s*TOLLGATE/);
    expect(contentOf(s)).toBe(mockCompletionText(40));
    expect(s.done).toBe(true);
    expect(s.events.at(-1).usage.completion_tokens).toBe(40);
  });

  it('ends an upstream drop mid-stream with one error chunk and [DONE], and charges what was produced', async () => {
    const before = await balanceUnits(gw, accountId);
    const s = await chatStream(gw, key, { model: 'test/drop', messages: MESSAGES });
    const error = expectInBandError(s);
    expect(error.code).toBe(502);
    expect(error.metadata.error_type).toBe('provider_unavailable');
    expect(contentOf(s)).toBe(mockCompletionText(3));

    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data.finish_reason).toBe('error');
    expect(g.json.data.total_cost).toBeGreaterThan(0);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  });

  it('ends a stalled upstream with an in-band timeout error within a few seconds', async () => {
    const before = await balanceUnits(gw, accountId);
    const started = Date.now();
    const s = await chatStream(gw, key, { model: 'test/stall', messages: MESSAGES });
    const elapsed = Date.now() - started;
    const error = expectInBandError(s);
    expect(error.code).toBe(408);
    expect(error.metadata.error_type).toBe('timeout');
    expect(contentOf(s)).toBe(mockCompletionText(3));
    expect(elapsed).toBeLessThan(6000); // idle budget 800 ms in the harness

    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.json.data.finish_reason).toBe('error');
    expect(g.json.data.total_cost).toBeGreaterThan(0);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  });

  it('ends the stream at a malformed upstream chunk with one error chunk (nothing skipped), and charges what was produced', async () => {
    // A chunk we cannot read may have carried a word of the answer: skipping it could serve another answer whole.
    const before = await balanceUnits(gw, accountId);
    const s = await chatStream(gw, key, { model: 'test/malformed', messages: MESSAGES });
    const error = expectInBandError(s);
    expect(error.code).toBe(502);
    expect(error.metadata.error_type).toBe('invalid_response');
    expect(contentOf(s)).toBe(mockCompletionText(2));
    expect(finishReasons(s)).not.toContain('stop');

    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.json.data.finish_reason).toBe('error');
    expect(g.json.data.total_cost).toBeGreaterThan(0);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  });

  it('finalises a stream the upstream ended without [DONE]', async () => {
    const s = await chatStream(gw, key, { model: 'test/no-done', messages: MESSAGES });
    expect(s.status).toBe(200);
    expect(contentOf(s)).toBe(mockCompletionText(40));
    expect(finishReasons(s)).toContain('stop');
    expect(s.events.at(-1).choices).toEqual([]);
    expect(s.events.at(-1).usage.completion_tokens).toBe(40);
    expect(s.done).toBe(true);
    expect(s.raw.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('estimates the usage of a stream whose upstream reports none', async () => {
    const s = await chatStream(gw, key, { model: 'test/no-usage', messages: MESSAGES });
    expect(s.status).toBe(200);
    const usage = s.events.at(-1).usage;
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.cost).toBeGreaterThan(0);
    expect(toUnits(usage.cost)).toBe(usage.prompt_tokens * PROMPT_UNITS + usage.completion_tokens * COMPLETION_UNITS);
    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.json.data.usage_estimated).toBe(true);
    expect(g.json.data.total_cost).toBe(usage.cost);
  });

  it("turns a failure after keep-alives went out into an in-band error, with the upstream's details", async () => {
    const before = await balanceUnits(gw, accountId);
    // 1 s before the 429 with a 200 ms keep-alive: the 200 and a comment are already on the wire.
    const s = await chatStream(gw, key, { model: 'test/slow-rate-limited', messages: MESSAGES });
    expect(s.comments.length).toBeGreaterThanOrEqual(1);
    const error = expectInBandError(s);
    expect(error.code).toBe(429);
    expect(error.metadata.error_type).toBe('rate_limit_exceeded');
    expect(error.metadata.provider_code).toBe('rate_limit_exceeded');
    expect(contentOf(s)).toBe('');
    expect((await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key)).status).toBe(404);
    expect(await balanceUnits(gw, accountId)).toBe(before);
  });

  describe('failures before anything was written', () => {
    // A keep-alive interval no loaded machine reaches, so nothing is on the wire when the failure arrives.
    let quiet: TestGateway;
    let quietKey: string;
    let quietAccount: string;
    beforeAll(async () => {
      quiet = await startTestGateway({
        target: sqliteTarget,
        configure: (file) => void (file.server.keep_alive_interval_ms = 60_000),
      });
      quietAccount = await quiet.createAccount(10);
      quietKey = (await quiet.createKey(quietAccount)).key;
    });
    afterAll(() => quiet.close());

    it.each([
      { model: 'test/rate-limited', status: 429 },
      { model: 'test/server-error', status: 502 },
      { model: 'test/bad-request', status: 400 },
      { model: 'test/context', status: 400 },
    ])('answers $model with a real HTTP $status JSON error, not a 200 stream', async ({ model, status }) => {
      const before = await balanceUnits(quiet, quietAccount);
      const s = await chatStream(quiet, quietKey, { model, messages: MESSAGES });
      expect(s.status, s.raw).toBe(status);
      expect(String(s.headers['content-type'])).toMatch(/^application\/json/);
      const id = s.headers['x-generation-id'];
      expect(id).toMatch(/^gen-/);
      const body = JSON.parse(s.raw);
      expect(body.error.code).toBe(status);
      expect(typeof body.error.message).toBe('string');
      if (status === 429) expect(s.headers['retry-after']).toBe('7');
      expect((await getJson(quiet, `/generation?id=${id}`, quietKey)).status).toBe(404);
      expect(await balanceUnits(quiet, quietAccount)).toBe(before);
    });
  });

  it('aborts the upstream when the caller disconnects, and charges what was produced', async () => {
    const before = await balanceUnits(gw, accountId);
    const upstream = gw.gateway.services.chat.execute.dispatcherFor('mock') as Agent;
    const mockOrigin = new URL(gw.provider.url).origin;
    const requestsBefore = gw.provider.stats.byModel.get('mock@tps=50,tokens=10000') ?? 0;

    const received = await new Promise<{ id: string; chunks: number }>((resolve, reject) => {
      const req = httpRequest(
        `${gw.api}/chat/completions`,
        {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          let settled = false;
          res.setEncoding('utf8');
          res.on('data', (piece: string) => {
            text += piece;
            const chunks = text.match(/^data: \{/gm)?.length ?? 0;
            if (!settled && chunks >= 4) {
              settled = true;
              req.destroy(); // the caller goes away mid-answer
              resolve({ id: String(res.headers['x-generation-id']), chunks });
            }
          });
          res.on('error', () => undefined);
          res.on('end', () => {
            if (!settled) reject(new Error(`stream ended before the caller left: ${text}`));
          });
        },
      );
      req.on('error', (error) => reject(error));
      req.end(JSON.stringify({ model: 'test/endless', messages: MESSAGES, stream: true }));
    });
    expect(received.id).toMatch(/^gen-/);
    expect(gw.provider.stats.byModel.get('mock@tps=50,tokens=10000')).toBe(requestsBefore + 1);

    // The generation is settled once the upstream read was abandoned.
    const g = await waitForGeneration(gw, received.id, key, 5000);
    expect(g.status).toBe(200);
    expect(g.json.data.cancelled).toBe(true);
    expect(g.json.data.streamed).toBe(true);
    expect(g.json.data.finish_reason).not.toBe('stop');
    expect(g.json.data.tokens_completion).toBeGreaterThanOrEqual(received.chunks - 1);
    expect(g.json.data.tokens_completion).toBeLessThan(1000); // 10,000 were scripted
    expect(g.json.data.total_cost).toBeGreaterThan(0);
    expect(toUnits(g.json.data.total_cost)).toBe(
      g.json.data.tokens_prompt * PROMPT_UNITS + g.json.data.tokens_completion * COMPLETION_UNITS,
    );

    // The upstream request is no longer running on the gateway's connection pool.
    const deadline = Date.now() + 5000;
    while ((upstream.stats[mockOrigin]?.running ?? 0) > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(upstream.stats[mockOrigin]?.running ?? 0).toBe(0);

    // Charged exactly once, for exactly that cost.
    await new Promise((r) => setTimeout(r, 300));
    const again = await getJson(gw, `/generation?id=${received.id}`, key);
    expect(again.json.data.total_cost).toBe(g.json.data.total_cost);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  });

  it('ends a stream cut by shutdown (grace over) with an in-band error and [DONE], and charges it', async () => {
    const own = await startTestGateway({ target: sqliteTarget });
    try {
      const ownKey = (await own.createKey(await own.createAccount(10))).key;
      const streaming = chatStream(own, ownKey, { model: 'test/endless', messages: MESSAGES });
      await new Promise((r) => setTimeout(r, 400));
      const shutdown = own.gateway.shutdown(200);
      const s = await streaming;
      await shutdown;
      const error = expectInBandError(s);
      expect(error.code).toBe(503);
      expect(contentOf(s).length).toBeGreaterThan(0);
      const generation = await own.store.getGeneration(String(s.headers['x-generation-id']));
      expect(generation?.finishReason).toBe('error');
      expect(generation?.totalCost).toBeGreaterThan(0n);
    } finally {
      await own.close();
    }
  });
});
