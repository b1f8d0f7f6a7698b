/**
 * Failover (docs/api.md): what moves on to the next endpoint or fallback model, what is returned as
 * is, what the caller gets when every attempt failed — and that a failed request is never charged.
 */
import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, mockCompletionText } from '../src/providers/mock-server.js';
import {
  balanceUnits,
  chat,
  chatStream,
  getJson,
  startTestGateway,
  toUnits,
  type TestGateway,
} from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Fail over, please.' }];
const PROMPT_TOKENS = countPromptTokens(MESSAGES, (text) => countTokens(text));
const PAID = { prompt: '0.000001', completion: '0.000002' };

/** Upstream model names that must never be called (their request count is checked). */
const NEVER_CALLED = 'mock@content=never%20called';

const EXTRA_MODELS = [
  {
    id: 'test/overloaded-retry-after',
    name: 'overloaded-retry-after',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'mock@status=503,retryAfter=30', pricing: PAID },
      { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
    ],
  },
  {
    id: 'test/rate-limited-twice',
    name: 'rate-limited-twice',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'mock@status=429,retryAfter=9', pricing: PAID },
      {
        provider: 'mock-b',
        model: 'mock@status=429,retryAfter=7,code=slow_down',
        pricing: { prompt: '0.000002', completion: '0.000004' },
      },
    ],
  },
  {
    id: 'test/rate-limited-no-hint',
    name: 'rate-limited-no-hint',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'mock@status=429,retryAfter=3', pricing: PAID },
      { provider: 'mock-b', model: 'mock@status=429', pricing: { prompt: '0.000002', completion: '0.000004' } },
    ],
  },
  {
    id: 'test/reset-first',
    name: 'reset-first',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'mock@behavior=reset', pricing: PAID },
      { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
    ],
  },
  {
    id: 'test/silent-first',
    name: 'silent-first',
    context_length: 8192,
    endpoints: [
      // Headers and the role chunk, then nothing: the first-token budget (2 s in the harness) runs out.
      { provider: 'mock', model: 'mock@behavior=stall,breakAfter=0', pricing: PAID },
      { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
    ],
  },
  {
    id: 'test/bad-request-first',
    name: 'bad-request-first',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'mock@status=400,message=bad%20parameter', pricing: PAID },
      { provider: 'mock-b', model: NEVER_CALLED, pricing: { prompt: '0.000002', completion: '0.000004' } },
    ],
  },
];

describe('failover', () => {
  let gw: TestGateway;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    // No keep-alive can go out before a failure arrives, however loaded the machine: statuses stay real HTTP statuses.
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: EXTRA_MODELS,
      configure: (file) => void (file.server.keep_alive_interval_ms = 60_000),
    });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(() => gw.close());

  /** The request failed with `status`, created no generation and charged nothing. */
  async function expectUncharged(result: { status: number; headers: Record<string, unknown> }, before: number) {
    const id = result.headers['x-generation-id'];
    expect(id).toMatch(/^gen-/);
    expect((await getJson(gw, `/generation?id=${String(id)}`, key)).status).toBe(404);
    expect(await balanceUnits(gw, accountId)).toBe(before);
  }

  it("moves past a 503 to the second endpoint and bills at the serving endpoint's prices", async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/failover', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock B');
    expect(r.json.model).toBe('test/failover');
    expect(r.json.choices[0].message.content).toBe(mockCompletionText(40));
    // Mock B's prices: 0.000002 prompt, 0.000004 completion per token.
    const expected = PROMPT_TOKENS * 2000 + 40 * 4000;
    expect(toUnits(r.json.usage.cost)).toBe(expected);

    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data.provider_name).toBe('Mock B');
    expect(g.json.data.provider_responses).toHaveLength(2);
    expect(
      g.json.data.provider_responses.map((a: { provider_name: string; status: number }) => [a.provider_name, a.status]),
    ).toEqual([
      ['Mock', 503],
      ['Mock B', 200],
    ]);
    expect(toUnits(g.json.data.total_cost)).toBe(expected);
    expect(await balanceUnits(gw, accountId)).toBe(before - expected);
  });

  it('an endpoint that failed with a Retry-After (503, 529) is tried after the others until then, as after a 429', async () => {
    const served = async () => {
      const r = await chat(gw, key, { model: 'test/overloaded-retry-after', messages: MESSAGES });
      expect(r.status, r.text).toBe(200);
      const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
      return g.json.data.provider_responses.map((a: { provider_name: string; status: number }) => [
        a.provider_name,
        a.status,
      ]);
    };
    expect(await served()).toEqual([
      ['Mock', 503],
      ['Mock B', 200],
    ]);
    // Mock asked for 30 s: the next requests go to Mock B first (and need nothing else).
    expect(await served()).toEqual([['Mock B', 200]]);
    expect(await served()).toEqual([['Mock B', 200]]);
  });

  it('fails over in a stream before the first byte, invisibly to the caller', async () => {
    const before = await balanceUnits(gw, accountId);
    const s = await chatStream(gw, key, { model: 'test/failover', messages: MESSAGES });
    expect(s.status, s.raw).toBe(200);
    expect(s.done).toBe(true);
    for (const e of s.events) {
      expect(e.provider).toBe('Mock B');
      expect(e.error).toBeUndefined();
    }
    const usage = s.events.at(-1).usage;
    const expected = PROMPT_TOKENS * 2000 + 40 * 4000;
    expect(toUnits(usage.cost)).toBe(expected);
    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.json.data.provider_responses.map((a: { status: number }) => a.status)).toEqual([503, 200]);
    expect(await balanceUnits(gw, accountId)).toBe(before - expected);
  });

  it.each([
    { model: 'test/reset-first', stream: false },
    { model: 'test/reset-first', stream: true },
    { model: 'test/silent-first', stream: true },
  ])('moves past an endpoint that fails before the first byte ($model, stream: $stream)', async ({ model, stream }) => {
    const before = await balanceUnits(gw, accountId);
    const expected = PROMPT_TOKENS * 2000 + 40 * 4000;
    let id: string;
    if (stream) {
      const s = await chatStream(gw, key, { model, messages: MESSAGES });
      expect(s.status, s.raw).toBe(200);
      expect(s.events.every((e) => e.provider === 'Mock B' && e.error === undefined)).toBe(true);
      expect(s.events.map((e) => e.choices[0]?.delta?.content ?? '').join('')).toBe(mockCompletionText(40));
      expect(toUnits(s.events.at(-1).usage.cost)).toBe(expected);
      id = String(s.headers['x-generation-id']);
    } else {
      const r = await chat(gw, key, { model, messages: MESSAGES });
      expect(r.status, r.text).toBe(200);
      expect(r.json.provider).toBe('Mock B');
      expect(toUnits(r.json.usage.cost)).toBe(expected);
      id = r.json.id;
    }
    const g = await getJson(gw, `/generation?id=${id}`, key);
    expect(g.json.data.provider_responses.map((a: { provider_name: string }) => a.provider_name)).toEqual([
      'Mock',
      'Mock B',
    ]);
    expect(g.json.data.provider_responses[1].status).toBe(200);
    expect(await balanceUnits(gw, accountId)).toBe(before - expected);
  });

  it('answers 429 with provider_code and Retry-After when the only provider is rate-limited', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/rate-limited', messages: MESSAGES });
    expect(r.status, r.text).toBe(429);
    expect(r.json.error.code).toBe(429);
    expect(r.json.error.metadata).toHaveProperty('provider_code');
    expect(r.json.error.metadata.provider_code).toBe('rate_limit_exceeded');
    expect(r.json.error.metadata.error_type).toBe('rate_limit_exceeded');
    expect(r.headers['retry-after']).toBe('7');
    await expectUncharged(r, before);
  });

  it('answers 429 with the smallest Retry-After when every provider is rate-limited with a hint', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/rate-limited-twice', messages: MESSAGES });
    expect(r.status, r.text).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(r.json.error.metadata.provider_code).toBe('slow_down'); // the last upstream's own code
    await expectUncharged(r, before);
  });

  it('sends no Retry-After when one of the rate-limited providers gave no hint', async () => {
    const r = await chat(gw, key, { model: 'test/rate-limited-no-hint', messages: MESSAGES });
    expect(r.status, r.text).toBe(429);
    expect(r.headers['retry-after']).toBeUndefined();
    expect(r.json.error.metadata).toHaveProperty('provider_code');
  });

  it("answers 502 with the provider's details when the upstream only fails with server errors", async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/server-error', messages: MESSAGES });
    expect(r.status, r.text).toBe(502);
    expect(r.json.error.code).toBe(502);
    expect(r.json.error.metadata.provider_name).toBe('Mock');
    expect(r.json.error.metadata).toHaveProperty('raw');
    // A 5xx body is the provider's internals: not relayed (issue 8, finding 6); the message says what failed.
    expect(r.json.error.metadata.raw).toBeNull();
    expect(r.json.error.metadata.error_type).toBe('server');
    expect(r.text).not.toContain('upstream-secret-key');
    await expectUncharged(r, before);
  });

  it("passes an upstream 400 through with the provider's message, without failing over", async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/bad-request', messages: MESSAGES });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.code).toBe(400);
    expect(r.json.error.message).toBe('bad parameter');
    expect(r.json.error.metadata.provider_name).toBe('Mock');
    await expectUncharged(r, before);

    const calls = gw.provider.stats.byModel.get(NEVER_CALLED) ?? 0;
    const first = gw.provider.stats.byModel.get('mock@status=400,message=bad%20parameter') ?? 0;
    const r2 = await chat(gw, key, { model: 'test/bad-request-first', messages: MESSAGES });
    expect(r2.status, r2.text).toBe(400);
    expect(r2.json.error.message).toContain('bad parameter');
    expect(gw.provider.stats.byModel.get('mock@status=400,message=bad%20parameter')).toBe(first + 1);
    expect(gw.provider.stats.byModel.get(NEVER_CALLED) ?? 0).toBe(calls);
    await expectUncharged(r2, before);
  });

  it('answers 400 when the prompt exceeds the context length', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/context', messages: MESSAGES });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.code).toBe(400);
    expect(r.json.error.metadata.error_type).toBe('context_length_exceeded');
    await expectUncharged(r, before);
  });

  it('charges nothing for failures in streaming mode either', async () => {
    const before = await balanceUnits(gw, accountId);
    for (const model of ['test/rate-limited', 'test/server-error', 'test/bad-request', 'test/context']) {
      const s = await chatStream(gw, key, { model, messages: MESSAGES });
      expect(s.status, `${model}: ${s.raw}`).toBe(
        model === 'test/rate-limited' ? 429 : model === 'test/server-error' ? 502 : 400,
      );
      await expectUncharged(s, before);
    }
  });

  it('moves a context-length failure on to the next model of `models`', async () => {
    const r = await chat(gw, key, { model: 'test/context', models: ['test/context', 'test/chat'], messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
  });

  it('serves from the next model of the `models` fallback list once the requested model failed twice, named and billed as that model', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, {
      model: 'test/server-error',
      models: ['test/server-error', 'test/chat'],
      messages: MESSAGES,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
    expect(r.json.provider).toBe('Mock');
    const expected = PROMPT_TOKENS * 1000 + 40 * 2000;
    expect(toUnits(r.json.usage.cost)).toBe(expected);
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.json.data.model).toBe('test/chat');
    // The requested model is retried once (a 500 may be transient) before the fallback model serves.
    expect(g.json.data.provider_responses.map((a: { status: number }) => a.status)).toEqual([500, 500, 200]);
    expect(await balanceUnits(gw, accountId)).toBe(before - expected);

    const s = await chatStream(gw, key, {
      model: 'test/server-error',
      models: ['test/server-error', 'test/chat'],
      messages: MESSAGES,
    });
    expect(s.status).toBe(200);
    for (const e of s.events) expect(e.model).toBe('test/chat');
  });

  it('takes `models` without `model` as OpenRouter does: the first is the model, the rest its fallbacks', async () => {
    // Found in review: `model` was required, so a client sending only `models` (@openrouter/sdk types
    // `model` optional) got a 400.
    const r = await chat(gw, key, { models: ['test/server-error', 'test/chat'], messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.json.data.provider_responses.map((a: { status: number }) => a.status)).toEqual([500, 500, 200]);

    const nulled = await chat(gw, key, { model: null, models: ['test/chat'], messages: MESSAGES });
    expect(nulled.status, nulled.text).toBe(200);
    expect(nulled.json.model).toBe('test/chat');

    for (const body of [
      { messages: MESSAGES },
      { models: [], messages: MESSAGES },
      { models: [7], messages: MESSAGES },
    ]) {
      const refused = await chat(gw, key, body);
      expect(refused.status, refused.text).toBe(400);
      expect(refused.json.error.message).toMatch(/model/);
    }
  });
});
