/**
 * Redis outages under three `tollgate serve` processes on one PostgreSQL database (docs/architecture.md,
 * "Redis outages"; README "Scaling out"). Redis here is a private server the test kills and starts
 * again empty, as a restart without persistence leaves it.
 *
 * Stated bounds, checked below:
 *   - Redis down: paid requests keep flowing; each process admits from 1/N of the balance less every
 *     process's holds (each reports its own through the database), so with the estimate equal to the
 *     cost X, a balance of n·X admits at most n + N − 1 (each process may pass its share by less than
 *     one request) and the final balance is ≥ −(N − 1)·X — also when the holds are all on one process.
 *   - Redis back empty while requests hold credit: a burst does not spend the held credit a second time,
 *     and the processes put their holds and their free-model counts back.
 *   - After recovery, the shared rules are exact again (at most n admitted).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisHoldStore } from '../src/billing/redis-hold-store.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { burst, fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';
import { startPrivateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { adminClient, buildOnce, type ServeProcess, startServe, waitReady } from './helpers/process.js';

const ADMIN = 'admin-token-for-redis-outage-01';
const PROCESSES = 3;
const FREE_PER_MINUTE = 6;

const admin = adminClient(ADMIN);

async function accountWithKey(url: string, usd: number): Promise<{ accountId: string; key: string }> {
  const account = await admin(url, 'POST', '/accounts', {
    email: `redis-outage-${randomBytes(4).toString('hex')}@example.test`,
  });
  const accountId = account.data.id as string;
  await admin(url, 'POST', `/accounts/${accountId}/credits`, { amount: usd, kind: 'grant' });
  const key = await admin(url, 'POST', `/accounts/${accountId}/keys`, { name: 'outage' });
  return { accountId, key: key.key as string };
}

async function balanceUnits(url: string, accountId: string): Promise<number> {
  return Math.round((await admin(url, 'GET', `/accounts/${accountId}`)).data.balance * 1e9);
}

async function post(url: string, key: string, body: Record<string, unknown>) {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

async function readyz(url: string): Promise<{ status: number; body: any }> {
  const response = await request(`${url}/readyz`);
  return { status: response.statusCode, body: await response.body.json() };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Redis outages under three gateway processes', { timeout: 120_000 }, () => {
  let dir: string;
  let provider: MockProvider;
  let schema: PgTestSchema;
  let redis: PrivateRedis;
  let gateways: ServeProcess[] = [];
  let urls: string[] = [];
  const prefix = `tollgate:outage:${randomBytes(4).toString('hex')}:`;

  beforeAll(async () => {
    const built = buildOnce();
    [dir, provider, schema, redis] = await Promise.all([
      mkdtemp(join(tmpdir(), 'tollgate-redis-outage-')),
      startMockProvider(),
      createPgTestSchema(),
      startPrivateRedis(),
    ]);
    const config = {
      providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
      models: [
        fixedCostModel('test/fixed', 'mock@latency=50'),
        fixedCostModel('test/slow', 'mock@tps=1'),
        {
          id: 'test/chat:free',
          name: 'free',
          context_length: 8192,
          endpoints: [{ provider: 'mock', model: 'mock@latency=10', pricing: { prompt: '0', completion: '0' } }],
        },
      ],
      limits: { edge: { burst: 0 }, redis_prefix: prefix, free_models: { per_minute: FREE_PER_MINUTE } },
    };
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(configPath, stringify(config));
    await built;
    const databaseUrl = `${schema.url}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`;
    const env = {
      TOLLGATE_CONFIG: configPath,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    gateways = await Promise.all(Array.from({ length: PROCESSES }, () => startServe(env)));
    urls = gateways.map((g) => g.url);
    // Every process counts all three (one heartbeat a second) and trusts Redis (first epoch's window over).
    await Promise.all(urls.map((url) => waitReady(url)));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.stop('SIGKILL')));
    await Promise.allSettled([
      redis?.destroy(),
      provider?.close(),
      schema?.drop(),
      rm(dir, { recursive: true, force: true }),
    ]);
  });

  it('Redis down: paid requests flow from each process’s share (≤ n + N − 1 of a balance worth n), free ones follow on_store_error; /readyz says degraded', async () => {
    const n = 10;
    const { accountId, key } = await accountWithKey(urls[0]!, n * X_USD);
    const free = await accountWithKey(urls[0]!, 1);
    await redis.stop();
    try {
      for (const url of urls)
        expect((await readyz(url)).body).toMatchObject({ status: 'degraded', redis: 'unavailable' });
      const result = await burst(urls, key, 'test/fixed', 300);
      const balance = await balanceUnits(urls[1]!, accountId);
      console.log(
        `[redis-outage] Redis down: admitted ${result.admitted}/300 of a balance worth ${n}, statuses ${JSON.stringify([...result.statuses])}, final balance ${balance} units`,
        result.others,
      );
      expect(result.others).toEqual([]); // only 200 and 402
      expect(result.admitted).toBeGreaterThanOrEqual(n);
      expect(result.admitted).toBeLessThanOrEqual(n + PROCESSES - 1);
      expect(balance).toBe(n * X_UNITS - result.admitted * X_UNITS);
      expect(balance).toBeGreaterThanOrEqual(-(PROCESSES - 1) * X_UNITS);
      // limits.free_models.on_store_error is `closed` (the default): free requests get 503, nothing forwarded.
      expect(
        (await post(urls[2]!, free.key, { model: 'test/chat:free', messages: [{ role: 'user', content: 'hi' }] }))
          .status,
      ).toBe(503);
    } finally {
      await redis.start();
    }
    await until(
      async () => (await Promise.all(urls.map(readyz))).every((r) => r.body.status === 'ready'),
      20_000,
      'trusting Redis again',
    );
    // Back to the shared rules, exact again.
    const after = await accountWithKey(urls[0]!, n * X_USD);
    const again = await burst(urls, after.key, 'test/fixed', 200);
    expect(again.admitted).toBeLessThanOrEqual(n);
    expect(again.admitted).toBeGreaterThanOrEqual(n - 1);
    expect(await balanceUnits(urls[0]!, after.accountId)).toBe(n * X_UNITS - again.admitted * X_UNITS);
  });

  it('Redis down while one process holds most of the balance: the others learn its holds and share only the rest', async () => {
    const n = 10;
    const { accountId, key } = await accountWithKey(urls[0]!, n * X_USD);
    // 9 streams of 10 s each on the first process: 9 of the 10 X held there, in Redis.
    const streams = Array.from({ length: n - 1 }, (_, i) =>
      post(urls[0]!, key, fixedBody('test/slow', i, { stream: true })),
    );
    const probe = new RedisHoldStore({ url: redis.url, keyPrefix: `${prefix}hold:` });
    try {
      await until(
        async () => (await probe.held(accountId, Date.now()).catch(() => 0n)) === BigInt((n - 1) * X_UNITS),
        5_000,
        'held on the first process',
      );
    } finally {
      await probe.close();
    }
    await redis.stop();
    let result;
    try {
      await until(
        async () => (await Promise.all(urls.map(readyz))).every((r) => r.body.status === 'degraded'),
        5_000,
        'every process degraded',
      );
      result = await burst(urls.slice(1), key, 'test/fixed', 60);
      console.log(
        `[redis-outage] Redis down, ${n - 1} of ${n} X held on one process: the other two admitted ${result.admitted}/60, statuses ${JSON.stringify([...result.statuses])}`,
        result.others,
      );
    } finally {
      await redis.start();
    }
    expect(result.others).toEqual([]);
    // X was left: a third of it each, and each may pass its share by less than one request (≤ n + N − 1
    // in all). Without the first process's report the two would have shared 10 X: about 8.
    expect(result.admitted).toBeLessThanOrEqual(2);
    expect((await Promise.all(streams)).map((a) => a.status)).toEqual(Array(n - 1).fill(200));
    expect(await balanceUnits(urls[1]!, accountId)).toBe(n * X_UNITS - (n - 1 + result.admitted) * X_UNITS);
    await until(
      async () => (await Promise.all(urls.map(readyz))).every((r) => r.body.status === 'ready'),
      20_000,
      'trusting Redis again',
    );
  });

  it('Redis emptied on a live connection (FLUSHALL) while one process holds the whole balance: a burst at the others spends none of it', async () => {
    const n = 6;
    const { accountId, key } = await accountWithKey(urls[0]!, n * X_USD);
    // The whole balance held by the first process alone: the others have no hold of their own on the
    // account, and it has no charge since their snapshots — nothing on the account tells them.
    const streams = Array.from({ length: n }, (_, i) =>
      post(urls[0]!, key, fixedBody('test/slow', i, { stream: true })),
    );
    const probe = new RedisHoldStore({ url: redis.url, keyPrefix: `${prefix}hold:` });
    const raw = new Redis(redis.url);
    try {
      await until(
        async () => (await probe.held(accountId, Date.now()).catch(() => 0n)) === BigInt(n * X_UNITS),
        5_000,
        'all held',
      );
      await raw.flushall();
      const after = await burst(urls.slice(1), key, 'test/fixed', 40);
      console.log(
        `[redis-outage] after FLUSHALL: ${after.admitted}/40 admitted, statuses ${JSON.stringify([...after.statuses])}`,
      );
      expect(after.admitted).toBe(0);
    } finally {
      raw.disconnect();
      await probe.close();
    }
    const answers = await Promise.all(streams);
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(200));
    expect(await balanceUnits(urls[0]!, accountId)).toBe(0);
    // Trusting Redis again before the next test (the resync window after the new epoch).
    await until(
      async () => (await Promise.all(urls.map(readyz))).every((r) => r.body.status === 'ready'),
      20_000,
      'trusting Redis again',
    );
  });

  it('Redis back empty while requests hold credit: no second spend of it; holds and free-model counts are put back', async () => {
    const n = 6;
    const { accountId, key } = await accountWithKey(urls[0]!, n * X_USD);
    const free = await accountWithKey(urls[0]!, 1);
    for (let i = 0; i < FREE_PER_MINUTE; i++)
      expect(
        (
          await post(urls[i % PROCESSES]!, free.key, {
            model: 'test/chat:free',
            messages: [{ role: 'user', content: `f${i}` }],
          })
        ).status,
      ).toBe(200);
    // n streams of 10 s each (10 tokens at 1 per second), two per process: the whole balance is held.
    const streams = Array.from({ length: n }, (_, i) =>
      post(urls[i % PROCESSES]!, key, fixedBody('test/slow', i, { stream: true })),
    );
    const probe = new RedisHoldStore({ url: redis.url, keyPrefix: `${prefix}hold:` });
    try {
      await until(
        async () => (await probe.held(accountId, Date.now()).catch(() => 0n)) === BigInt(n * X_UNITS),
        5_000,
        'all held',
      );
      await redis.stop();
      await redis.start(); // empty
      const burstAfterRestart = await burst(urls, key, 'test/fixed', 60);
      console.log(
        `[redis-outage] after Redis came back empty: ${burstAfterRestart.admitted}/60 admitted, statuses ${JSON.stringify([...burstAfterRestart.statuses])}`,
      );
      expect(burstAfterRestart.admitted).toBe(0);
      // Each process re-registers its holds: the new Redis holds the whole balance again.
      await probe.ready();
      await until(
        async () => (await probe.held(accountId, Date.now()).catch(() => 0n)) === BigInt(n * X_UNITS),
        6_000,
        'holds restored',
      );
      // And its free-model entries: the minute's limit is still used up.
      await until(
        async () => (await Promise.all(urls.map(readyz))).every((r) => r.body.status === 'ready'),
        20_000,
        'trusting Redis again',
      );
      const freeAfter = await post(urls[1]!, free.key, {
        model: 'test/chat:free',
        messages: [{ role: 'user', content: 'after' }],
      });
      if (freeAfter.status !== 429)
        console.log(
          freeAfter.text,
          gateways.map((g) => g.stdout().slice(-3000) + g.stderr().slice(-2000)).join('\n---\n'),
        );
      expect(freeAfter.status).toBe(429);
    } finally {
      await probe.close();
    }
    const answers = await Promise.all(streams);
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(200));
    expect(await balanceUnits(urls[0]!, accountId)).toBe(0);
  });
});
