/**
 * Free-model rate limits through the gateway (docs/api.md), on PostgreSQL, with the counters in
 * process memory and in the real Redis (127.0.0.1:6379, a per-run key prefix): per account across
 * its keys, the 429's headers and body, no X-RateLimit-* on successes, 50 → 1000 a day after a
 * purchase, refusals that change no balance and create no generation, a 402 that takes no slot, and
 * a slot given back when no provider was reached. Minutes and days pass on an injected clock.
 */
import { createServer, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utcDayEnd, utcDayStart, DAY_MS, type RateLimiter } from '../src/limits/rate-limit.js';
import { FREE_PER_DAY } from '../src/limits/free-model-policy.js';
import { RedisRateLimiter } from '../src/limits/redis-rate-limiter.js';
import { balanceUnits, chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { LIMITER_TARGETS, uniqueTestPrefix, type LimiterSpace } from './helpers/limiter-targets.js';
import { postgresTarget, sqliteTarget } from './helpers/store-targets.js';

const HELLO = [{ role: 'user', content: 'Hello' }];
const FREE = { model: 'test/chat:free', messages: HELLO };

/** Starts at 06:00 UTC of a future day, so no test crosses midnight by accident; tests move it forward. */
function steppableClock() {
  const start = utcDayStart(Date.now()) + 3 * DAY_MS + 6 * 3_600_000;
  let offset = start - Date.now();
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

function expectNoRateLimitHeaders(headers: Record<string, unknown>): void {
  for (const name of Object.keys(headers)) expect(name.toLowerCase().startsWith('x-ratelimit')).toBe(false);
}

describe.each(LIMITER_TARGETS)('free-model rate limits through the gateway: $name counters', (target) => {
  let space: LimiterSpace;
  let limiter: RateLimiter;
  let gw: TestGateway;
  const clock = steppableClock();

  beforeAll(async () => {
    space = await target.createSpace();
    const opened = await space.open();
    limiter = opened;
    gw = await startTestGateway({
      target: postgresTarget,
      clock,
      rateLimiter: {
        limiter: opened,
        store: target.name,
        ...(opened instanceof RedisRateLimiter ? { ping: () => opened.ping() } : {}),
      },
      extraModels: [
        {
          id: 'test/broken:free',
          name: 'broken',
          context_length: 8192,
          endpoints: [{ provider: 'mock', model: 'mock@status=500', pricing: { prompt: '0', completion: '0' } }],
        },
      ],
      // One failure opens a breaker, so a request can end before reaching any provider (refund test).
      configure: (file) =>
        Object.assign(file.routing, {
          tries_per_endpoint: 1,
          breaker: { failure_threshold: 1, open_ms: 30_000, max_open_ms: 30_000 },
        }),
    });
  });

  afterAll(async () => {
    await gw?.close();
    await space?.cleanup();
  });

  async function generationCount(accountId: string): Promise<number> {
    const rows = await gw.database
      .openDriver()
      .all('SELECT COUNT(*) AS n FROM generations WHERE account_id = ?', [accountId]);
    return Number((rows[0] as { n: unknown }).n);
  }

  it('refuses the 21st free request in a minute across two keys of one account, with the §5 headers, while another account is untouched', async () => {
    const account = await gw.createAccount(1);
    const [a, b] = [await gw.createKey(account), await gw.createKey(account)];
    const other = await gw.createAccount(1);
    const otherKey = await gw.createKey(other);

    const first20 = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(gw, (i % 2 ? b : a).key, FREE)));
    expect(first20.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const response of first20) expectNoRateLimitHeaders(response.headers);

    const balance = await balanceUnits(gw, account);
    const generations = await generationCount(account);
    const upstreamRequests = gw.provider.stats.requests;

    const refused = await chat(gw, b.key, FREE);
    expect(refused.status).toBe(429);
    const now = clock.now();
    const reset = Number(refused.headers['x-ratelimit-reset']);
    expect(refused.headers['x-ratelimit-limit']).toBe('20');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(reset).toBeGreaterThan(now);
    expect(reset).toBeLessThanOrEqual(now + 60_000);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(String(refused.headers['x-generation-id'])).toMatch(/^gen-/);
    expect(refused.json).toEqual({
      error: {
        code: 429,
        message: expect.stringContaining('free-models-per-min'),
        metadata: {
          error_type: 'rate_limit_exceeded',
          limit_source: 'free_model_per_minute',
          headers: { 'X-RateLimit-Limit': '20', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) },
        },
      },
    });

    // A stream is refused the same way, before any SSE byte.
    const stream = await chatStream(gw, a.key, FREE);
    expect(stream.status).toBe(429);
    expect(stream.headers['x-ratelimit-limit']).toBe('20');

    // The refusals changed nothing and reached nobody.
    expect(await balanceUnits(gw, account)).toBe(balance);
    expect(await generationCount(account)).toBe(generations);
    expect(gw.provider.stats.requests).toBe(upstreamRequests);

    // Other accounts, and this account's paid requests, are not limited by it.
    const untouched = await chat(gw, otherKey.key, FREE);
    expect(untouched.status).toBe(200);
    expectNoRateLimitHeaders(untouched.headers);
    expect((await chat(gw, a.key, { model: 'test/chat', messages: HELLO })).status).toBe(200);

    const info = await getJson(gw, '/key', b.key);
    expect(info.json.data.free_model_daily_requests).toEqual({ limit: 50, used: 20, remaining: 30 });
    // The account holder's view (the dashboard's Credits page) counts the same.
    const manager = await gw.createKey(account, { management: true });
    expect((await getJson(gw, '/account', manager.key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 20,
      remaining: 30,
    });
    expect((await getJson(gw, '/key', otherKey.key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 1,
      remaining: 49,
    });

    // A minute later the account may send again.
    clock.advance(61_000);
    expect((await chat(gw, a.key, FREE)).status).toBe(200);
  });

  it('switches the daily cap from 50 to 1000 once 10 credits are purchased, over the same count', async () => {
    const account = await gw.createAccount(2, 'grant');
    const { key } = await gw.createKey(account);
    for (let batch = 0; batch < 3; batch++) {
      const size = batch < 2 ? 20 : 10;
      const statuses = await Promise.all(Array.from({ length: size }, () => chat(gw, key, FREE).then((r) => r.status)));
      expect(statuses).toEqual(Array(size).fill(200));
      clock.advance(61_000);
    }
    const refused = await chat(gw, key, FREE);
    expect(refused.status).toBe(429);
    expect(refused.json.error.metadata.limit_source).toBe('free_model_per_day');
    expect(refused.json.error.message).toContain('Add 10 credits to unlock 1000');
    expect(refused.headers['x-ratelimit-limit']).toBe('50');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.headers['x-ratelimit-reset']).toBe(String(utcDayEnd(clock.now())));
    expect(refused.headers['retry-after']).toBeUndefined(); // only per-minute refusals say when to retry
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 50,
      remaining: 0,
    });

    // Grants do not count: only purchases (all time) do.
    expect((await gw.admin('POST', `/accounts/${account}/credits`, { amount: 20, kind: 'grant' })).status).toBe(201);
    expect((await chat(gw, key, FREE)).status).toBe(429);
    expect((await gw.admin('POST', `/accounts/${account}/credits`, { amount: 10, kind: 'purchase' })).status).toBe(201);
    const after = await chat(gw, key, FREE);
    expect(after.status).toBe(200);
    expectNoRateLimitHeaders(after.headers);
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 1000,
      used: 51,
      remaining: 949,
    });

    // Fill the day up to 999 directly in the counter store (one rule, the same counter the gateway uses).
    const dayRule = { name: FREE_PER_DAY, kind: 'utc_day' as const, limit: 1000 };
    for (let i = 0; i < 948; i++) expect((await limiter.consume(account, [dayRule], clock.now())).allowed).toBe(true);
    clock.advance(61_000);
    expect((await chat(gw, key, FREE)).status).toBe(200); // the 1000th
    const capped = await chat(gw, key, FREE);
    expect(capped.status).toBe(429);
    expect(capped.headers['x-ratelimit-limit']).toBe('1000');
    expect(capped.json.error.message).not.toContain('Add 10 credits');
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 1000,
      used: 1000,
      remaining: 0,
    });
  });

  it('a 402 takes no free-model slot', async () => {
    const account = await gw.createAccount(1);
    const { key } = await gw.createKey(account);
    expect((await gw.admin('POST', `/accounts/${account}/credits`, { amount: -2, kind: 'adjustment' })).status).toBe(
      201,
    );
    for (let i = 0; i < 3; i++) expect((await chat(gw, key, FREE)).status).toBe(402);
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 0,
      remaining: 50,
    });
  });

  it('gives the slot back when the request never reached a provider', async () => {
    const account = await gw.createAccount(1);
    const { key } = await gw.createKey(account);
    const broken = { model: 'test/broken:free', messages: HELLO };
    const failed = await chat(gw, key, broken);
    expect(failed.status).toBe(502); // reached the provider: the slot stays used
    const upstreamRequests = gw.provider.stats.requests;
    const blocked = await chat(gw, key, broken); // the breaker is open now: no attempt is made
    expect(blocked.status).toBeGreaterThanOrEqual(500);
    expect(gw.provider.stats.requests).toBe(upstreamRequests);
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 1,
      remaining: 49,
    });
  });
});

describe('a gateway without a free model', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) =>
        void (file.models = file.models.filter((model) => !(model as { id: string }).id.endsWith(':free'))),
    });
  });
  afterAll(() => gw?.close());

  it('GET /account has no free-model allowance to show (null), while GET /key keeps its OpenRouter shape', async () => {
    const account = await gw.createAccount(1);
    const manager = await gw.createKey(account, { management: true });
    expect((await getJson(gw, '/account', manager.key)).json.data.free_model_daily_requests).toBeNull();
    const { key } = await gw.createKey(account);
    expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
      limit: 50,
      used: 0,
      remaining: 50,
    });
  });
});

describe('free-model rate limits when Redis is unreachable (REDIS_URL on a closed port)', () => {
  let closedUrl: string;
  beforeAll(async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    closedUrl = `redis://127.0.0.1:${port}`;
  });

  async function gatewayWith(onStoreError: 'closed' | 'open') {
    const lines: string[] = [];
    const limiter = new RedisRateLimiter({ url: closedUrl, keyPrefix: uniqueTestPrefix(), timeoutMs: 300 });
    const gw = await startTestGateway({
      target: sqliteTarget,
      rateLimiter: { limiter, store: 'redis', ping: () => limiter.ping() },
      logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }),
      configure: (file) => Object.assign(file.limits, { free_models: { on_store_error: onStoreError } }),
    });
    return {
      gw,
      lines,
      async close() {
        await gw.close();
        await limiter.close();
      },
    };
  }

  it('closed (the default): a free request → 503 and nothing is forwarded; paid requests still work; /readyz → 503', async () => {
    const { gw, close } = await gatewayWith('closed');
    try {
      const account = await gw.createAccount(1);
      const { key } = await gw.createKey(account);
      const balance = await balanceUnits(gw, account);
      const upstreamRequests = gw.provider.stats.requests;
      const refused = await chat(gw, key, FREE);
      expect(refused.status).toBe(503);
      expect(refused.json.error).toMatchObject({
        code: 503,
        message: expect.stringContaining('rate-limit store is unavailable'),
      });
      expect(gw.provider.stats.requests).toBe(upstreamRequests);
      expect(await balanceUnits(gw, account)).toBe(balance);
      expect((await chatStream(gw, key, FREE)).status).toBe(503);
      expect(gw.provider.stats.requests).toBe(upstreamRequests);
      expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200); // paid models have no platform cap
      const ready = await getJson(gw, '/../../readyz');
      expect(ready.status).toBe(503);
      expect(ready.json).toMatchObject({ status: 'unavailable', redis: 'unavailable', reasons: ['redis_unavailable'] });
      expect((await getJson(gw, '/key', key)).status).toBe(503);
      // The account's own page still answers (the dashboard's balance), without today's count.
      const manager = await gw.createKey(account, { management: true });
      const overview = await getJson(gw, '/account', manager.key);
      expect(overview.status).toBe(200);
      expect(overview.json.data).toMatchObject({ id: account, free_model_daily_requests: null });
    } finally {
      await close();
    }
  });

  it('open: a free request is served uncounted, and the outage is logged (once per interval)', async () => {
    const { gw, lines, close } = await gatewayWith('open');
    try {
      const account = await gw.createAccount(1);
      const { key } = await gw.createKey(account);
      for (let i = 0; i < 3; i++) {
        const served = await chat(gw, key, FREE);
        expect(served.status).toBe(200);
        expectNoRateLimitHeaders(served.headers);
      }
      expect((await getJson(gw, '/key', key)).json.data.free_model_daily_requests).toEqual({
        limit: 50,
        used: 0,
        remaining: 50,
      });
      const warnings = lines.filter((l) => l.includes('free-model rate limits not enforced'));
      expect(warnings).toHaveLength(1);
      expect((await getJson(gw, '/../../readyz')).status).toBe(503);
    } finally {
      await close();
    }
  });
});
