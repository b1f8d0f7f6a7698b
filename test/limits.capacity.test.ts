/**
 * Capacity limits per model and per endpoint (docs/api.md, "Capacity limits") through the gateway,
 * with the counters in process memory and in the real Redis: an endpoint at its quota is skipped
 * before any upstream call, every candidate at its quota answers 429 with the platform headers, a
 * model-wide limit covers all its endpoints, tokens per minute are reconciled to the real usage, and
 * three gateways sharing Redis admit exactly the limit. Upstream calls are counted by the mock
 * provider per upstream model name, so "no upstream call" is observed, not assumed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimiter } from '../src/limits/rate-limit.js';
import { RedisRateLimiter } from '../src/limits/redis-rate-limiter.js';
import { expectError } from './helpers/api.js';
import { chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { LIMITER_TARGETS, type LimiterSpace } from './helpers/limiter-targets.js';
import { postgresTarget } from './helpers/store-targets.js';

const HELLO = [{ role: 'user', content: 'Hello' }];
const PRICE = { prompt: '0.000001', completion: '0.000002' };
const CHEAP = { prompt: '0.0000005', completion: '0.000001' };

const MODELS = [
  {
    // The cheaper endpoint (tried first) takes 2 requests a minute; the other has no limit.
    id: 'cap/two',
    name: 'two endpoints',
    context_length: 8192,
    endpoints: [
      { provider: 'mock', model: 'cap-two-a', pricing: CHEAP, limits: { rpm: 2 } },
      { provider: 'mock-b', model: 'cap-two-b', pricing: PRICE },
    ],
  },
  {
    id: 'cap/solo',
    name: 'one endpoint',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'cap-solo', pricing: PRICE, limits: { rpm: 2 } }],
  },
  {
    id: 'cap/model',
    name: 'model-wide limit',
    context_length: 8192,
    limits: { rpm: 3 },
    endpoints: [
      { provider: 'mock', model: 'cap-model-a', pricing: CHEAP },
      { provider: 'mock-b', model: 'cap-model-b', pricing: PRICE },
    ],
  },
  {
    id: 'cap/tpm',
    name: 'tokens per minute',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'cap-tpm', pricing: PRICE, limits: { tpm: 200 } }],
  },
];

function upstreamCalls(gw: TestGateway, model: string): number {
  return gw.provider.stats.byModel.get(model) ?? 0;
}

describe.each(LIMITER_TARGETS)('capacity limits through the gateway: $name counters', (target) => {
  let space: LimiterSpace;
  let limiter: RateLimiter;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    space = await target.createSpace();
    limiter = await space.open();
    gw = await startTestGateway({
      target: postgresTarget,
      rateLimiter: {
        limiter,
        store: target.name,
        ...(limiter instanceof RedisRateLimiter ? { ping: () => (limiter as RedisRateLimiter).ping() } : {}),
      },
      extraModels: MODELS,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });

  afterAll(async () => {
    await gw?.close();
    await space?.cleanup();
  });

  it('an endpoint at its quota is skipped for the next one, without an upstream call', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await chat(gw, key, { model: 'cap/two', messages: HELLO })).status);
    expect(statuses).toEqual([200, 200, 200]);
    expect(upstreamCalls(gw, 'cap-two-a')).toBe(2);
    expect(upstreamCalls(gw, 'cap-two-b')).toBe(1);
  });

  it('every candidate at its quota: 429 with X-RateLimit-*, Retry-After and error_type rate_limit_exceeded; nothing charged', async () => {
    const account = await gw.createAccount(10);
    const own = (await gw.createKey(account)).key;
    expect((await chat(gw, own, { model: 'cap/solo', messages: HELLO })).status).toBe(200);
    expect((await chat(gw, own, { model: 'cap/solo', messages: HELLO })).status).toBe(200);
    const before = (await getJson(gw, '/credits', own)).json.data.total_usage;
    const refused = await chat(gw, own, { model: 'cap/solo', messages: HELLO });
    const error = expectError(refused, 429, /capacity of 2 requests per minute/);
    expect(error.metadata).toMatchObject({ error_type: 'rate_limit_exceeded', limit_source: 'capacity_rpm' });
    expect(refused.headers['x-ratelimit-limit']).toBe('2');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(refused.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now());
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(upstreamCalls(gw, 'cap-solo')).toBe(2);
    expect((await getJson(gw, '/credits', own)).json.data.total_usage).toBe(before);
  });

  it('a model-wide limit covers all its endpoints', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await chat(gw, key, { model: 'cap/model', messages: HELLO })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(upstreamCalls(gw, 'cap-model-a') + upstreamCalls(gw, 'cap-model-b')).toBe(3);
  });

  it('tokens per minute: each attempt holds its estimate until the real count replaces it', async () => {
    // Estimate: the prompt (a few tokens) + a completion budget of 150 — under 200 one at a time. The
    // real answers are far smaller, so sequential requests keep fitting once reconciled.
    for (let i = 0; i < 4; i++)
      expect((await chat(gw, key, { model: 'cap/tpm', messages: HELLO, max_tokens: 150 })).status).toBe(200);
    // Five at once: the first takes ~155 of 200, so the next one still fits (155 < 200), the rest do not.
    const burst = await Promise.all(
      Array.from({ length: 5 }, () => chat(gw, key, { model: 'cap/tpm', messages: HELLO, max_tokens: 150 })),
    );
    const refused = burst.filter((r) => r.status === 429);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) expect(expectError(r, 429).metadata.limit_source).toBe('capacity_tpm');
  });

  it('GET /models/{id}/endpoints shows the configured limits', async () => {
    const endpoints = (await getJson(gw, '/models/cap/two/endpoints')).json.data.endpoints as Array<{
      tag: string;
      rate_limits: unknown;
    }>;
    expect(endpoints.find((e) => e.tag === 'mock')?.rate_limits).toEqual({
      endpoint: { requests_per_minute: 2, tokens_per_minute: null },
      model: null,
    });
    expect(endpoints.find((e) => e.tag === 'mock-b')?.rate_limits).toEqual({ endpoint: null, model: null });
    const model = (await getJson(gw, '/models/cap/model/endpoints')).json.data.endpoints as Array<{
      rate_limits: unknown;
    }>;
    expect(model[0]?.rate_limits).toEqual({
      endpoint: null,
      model: { requests_per_minute: 3, tokens_per_minute: null },
    });
  });
});

describe('capacity limits across three gateways sharing Redis', () => {
  let space: LimiterSpace;
  const gateways: TestGateway[] = [];

  beforeAll(async () => {
    space = await LIMITER_TARGETS.find((t) => t.name === 'redis')!.createSpace();
    for (let i = 0; i < 3; i++) {
      const limiter = await space.open();
      gateways.push(
        await startTestGateway({
          target: postgresTarget,
          rateLimiter: { limiter, store: 'redis' },
          extraModels: MODELS,
        }),
      );
    }
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await space?.cleanup();
  });

  it('admits exactly the endpoint limit of 12 concurrent requests over three processes', async () => {
    const keys = await Promise.all(gateways.map(async (g) => (await g.createKey(await g.createAccount(10))).key));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        chat(gateways[i % 3]!, keys[i % 3]!, { model: 'cap/solo', messages: HELLO }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    expect(results.filter((r) => r.status === 429)).toHaveLength(10);
  });
});
