/**
 * Mid-stream continuation (issue 4, stretch; off by default): when an upstream dies after content
 * reached the caller, another endpoint that supports prefill continues the same answer, the caller
 * gets one uninterrupted stream, and both segments are billed for their real usage.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

interface Continuer {
  url: string;
  bodies: Array<{ messages: Array<{ role: string; content: string }> }>;
  server: Server;
}

/** An OpenAI-compatible streaming upstream that records what it was asked to continue. */
async function startContinuer(): Promise<Continuer> {
  const bodies: Continuer['bodies'] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      bodies.push(JSON.parse(text));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (choices: unknown[], extra: object = {}) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...extra })}\n\n`;
      res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: { content: ' fox jumps' }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]));
      res.write(chunk([], { usage: { prompt_tokens: 50, completion_tokens: 2, total_tokens: 52 } }));
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies, server };
}

function model(id: string) {
  return {
    id,
    name: id,
    context_length: 8192,
    endpoints: [
      {
        provider: 'mock',
        model: 'mock@behavior=drop,breakAfter=3,tps=100',
        pricing: { prompt: '0.000001', completion: '0.000002' },
        supports_prefill: true,
      },
      {
        provider: 'continuer',
        model: 'c',
        pricing: { prompt: '0.000003', completion: '0.000004' },
        supports_prefill: true,
      },
    ],
  };
}

describe.each([true, false])('mid-stream continuation enabled=%s', (enabled) => {
  let continuer: Continuer;
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    continuer = await startContinuer();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'continuer',
          name: 'Continuer',
          kind: 'openai',
          base_url: continuer.url,
          timeouts: {},
        });
        file.models.push(model('test/continue'));
        (file as { routing: Record<string, unknown> }).routing.mid_stream_continuation = enabled;
      },
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((resolve) => continuer.server.close(resolve));
  });

  it(
    enabled
      ? 'continues the answer on the prefill endpoint, one stream, both segments billed'
      : 'is off: the caller gets the in-band error',
    async () => {
      const sse = await chatStream(gw, key, {
        model: 'test/continue',
        messages: [{ role: 'user', content: 'Tell me about the fox' }],
      });
      expect(sse.status).toBe(200);
      expect(sse.done).toBe(true);
      const content = sse.events
        .flatMap((e) => (e.choices ?? []).map((c: { delta: { content?: string } }) => c.delta.content ?? ''))
        .join('');
      const finishes = sse.events
        .flatMap((e) => (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason))
        .filter((f: string | null) => f !== null);
      if (!enabled) {
        expect(finishes).toEqual(['error']);
        expect(continuer.bodies).toHaveLength(0);
        // What the broken answer was charged comes with the error that ends it (no usage chunk before
        // it: a usage chunk reads as the end of a finished answer).
        const errorChunk = sse.events.at(-1);
        expect(errorChunk.error).toBeDefined();
        expect(sse.events.some((e) => Array.isArray(e.choices) && e.choices.length === 0)).toBe(false);
        const generation = (await getJson(gw, `/generation?id=${sse.events[0].id}`, key)).json.data;
        expect(errorChunk.usage.cost).toBeGreaterThan(0);
        expect(Math.round(errorChunk.usage.cost * 1e9)).toBe(Math.round(generation.total_cost * 1e9));
        expect(errorChunk.usage.completion_tokens).toBe(generation.tokens_completion);
        return;
      }
      expect(sse.events.some((e) => e.error)).toBe(false);
      expect(finishes).toEqual(['stop']);
      expect(content).toBe('The quick brown fox jumps');
      // Exactly one role delta reached the caller, and every chunk kept the stream's id.
      expect(sse.events.filter((e) => e.choices?.[0]?.delta?.role).length).toBe(1);
      expect(new Set(sse.events.map((e) => e.id)).size).toBe(1);
      // Chunks name the provider that wrote them: the first endpoint, then the one that continued
      // (the usage chunk too, as /generation does).
      expect(sse.events[0].provider).toBe('Mock');
      expect(sse.events.at(-1).provider).toBe('Continuer');
      const named = sse.events.map((e) => e.provider as string);
      expect(named.slice(named.indexOf('Continuer')).every((p) => p === 'Continuer')).toBe(true);

      // The continuation was asked with the partial answer as a trailing assistant message.
      expect(continuer.bodies).toHaveLength(1);
      expect(continuer.bodies[0]!.messages.at(-1)).toEqual({ role: 'assistant', content: 'The quick brown' });

      // Billing: segment 1 estimated (prompt estimate + 3 completion tokens) at the first endpoint's prices,
      // segment 2 at its own usage and prices.
      const usage = sse.events.at(-1).usage;
      const promptEstimate = usage.prompt_tokens - 50;
      expect(usage.completion_tokens).toBe(3 + 2);
      const expectedUnits = promptEstimate * 1000 + 3 * 2000 + 50 * 3000 + 2 * 4000;
      expect(Math.round(usage.cost * 1e9)).toBe(expectedUnits);
      const generation = (await getJson(gw, `/generation?id=${sse.events[0].id}`, key)).json.data;
      expect(Math.round(generation.total_cost * 1e9)).toBe(expectedUnits);
      expect(generation.provider_name).toBe('Continuer');
      expect(generation.provider_responses.map((r: { provider_name: string }) => r.provider_name)).toEqual([
        'Mock',
        'Continuer',
      ]);
      expect(generation.finish_reason).toBe('stop');
    },
  );
});
