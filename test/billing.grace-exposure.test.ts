/**
 * The grace exposure (billing/grace-exposure.ts) in this process and in Redis (the real server):
 * the Lua script decides as `decideGrace` does on any sequence of requests, concurrent callers on
 * separate connections never pass the cap together, the counters lapse after their TTL, a
 * balance of billions stays exact, and a Redis that restarts without its data gets every process's
 * admissions back (a private Redis the test restarts).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalGraceExposure, type GraceRequest } from '../src/billing/grace-exposure.js';
import { RedisGraceExposure } from '../src/billing/redis-grace-exposure.js';
import { UNITS_PER_USD } from '../src/core/money.js';
import { RedisFleet } from '../src/store/redis-fleet.js';
import { failFastRedisOptions } from '../src/store/redis-script-client.js';
import { REDIS_TEST_URL } from './helpers/limiter-targets.js';
import { startPrivateRedis } from './helpers/private-redis.js';

const MICRO = 1000n; // units per µUSD, the Redis store's unit

function base(overrides: Partial<GraceRequest> = {}): GraceRequest {
  return {
    accountId: 'acct_a',
    keyHash: 'k1',
    amount: 1000n * MICRO,
    paid: true,
    room: 1_000_000n * MICRO,
    maxExposure: 3000n * MICRO,
    keyRoom: null,
    ttlMs: 60_000,
    ...overrides,
  };
}

/** Two processes (a fleet view and a grace count each) sharing a private Redis the test may restart. */
async function privateFleet(resyncMs: number, heartbeatMs = 100) {
  const server = await startPrivateRedis();
  const keyPrefix = `tollgate:test:grace:${randomBytes(4).toString('hex')}:`;
  const processes: Array<{ redis: Redis; fleet: RedisFleet; grace: RedisGraceExposure }> = [];
  for (let i = 0; i < 2; i++) {
    const redis = new Redis(server.url, failFastRedisOptions(300));
    redis.on('error', () => undefined);
    const fleet = new RedisFleet({ redis, keyPrefix, heartbeatMs, resyncMs });
    await fleet.start();
    processes.push({ redis, fleet, grace: new RedisGraceExposure({ redis, keyPrefix, fleet, timeoutMs: 300 }) });
  }
  /** Until both processes trust Redis (a new epoch's window over). */
  const trusted = async () => {
    const deadline = Date.now() + 10_000;
    while (!processes.every((p) => p.fleet.trusted) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(processes.every((p) => p.fleet.trusted)).toBe(true);
  };
  return { server, processes: processes as [(typeof processes)[0], (typeof processes)[0]], trusted };
}

async function closeFleet(
  server: { destroy(): Promise<void> },
  processes: ReadonlyArray<{ redis: Redis; fleet: RedisFleet; grace: RedisGraceExposure }>,
): Promise<void> {
  for (const p of processes) {
    await p.grace.close();
    await p.fleet.stop();
    p.redis.disconnect();
  }
  await server.destroy();
}

describe('grace exposure', () => {
  const clients: Redis[] = [];
  const prefix = () => `tollgate:test:grace:${randomBytes(4).toString('hex')}:`;
  const redisExposure = async (keyPrefix: string) => {
    const redis = new Redis(REDIS_TEST_URL, failFastRedisOptions(500));
    clients.push(redis);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    return new RedisGraceExposure({ redis, keyPrefix });
  };

  beforeAll(async () => {
    await (await redisExposure(prefix())).reserve(base()); // Redis answers
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  });

  it('Redis decides as the local count does, on any sequence of requests (amounts in whole µUSD)', async () => {
    const request = fc.record({
      account: fc.constantFrom('acct_a', 'acct_b'),
      key: fc.constantFrom('k1', 'k2'),
      amount: fc.bigInt({ min: 0n, max: 5000n }),
      paid: fc.boolean(),
      room: fc.bigInt({ min: -2000n, max: 20_000n }),
      cap: fc.bigInt({ min: 0n, max: 12_000n }),
      keyRoom: fc.option(fc.bigInt({ min: -1000n, max: 9000n }), { nil: null }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 25 }), async (requests) => {
        const local = new LocalGraceExposure();
        const shared = await redisExposure(prefix());
        for (const r of requests) {
          const given = base({
            accountId: r.account,
            keyHash: `${r.account}:${r.key}`, // a key belongs to one account
            amount: r.amount * MICRO,
            paid: r.paid,
            room: r.room * MICRO,
            maxExposure: r.cap * MICRO,
            keyRoom: r.keyRoom === null ? null : r.keyRoom * MICRO,
          });
          expect(await shared.reserve(given)).toBe(await local.reserve(given));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('two processes reserving at once admit no more than the cap in all', async () => {
    const keyPrefix = prefix();
    const a = await redisExposure(keyPrefix);
    const b = await redisExposure(keyPrefix);
    const decisions = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).reserve(base({ keyRoom: 10_000n * MICRO }))),
    );
    expect(decisions.filter((d) => d === 'admitted')).toHaveLength(3);
    expect(decisions.filter((d) => d === 'grace_exposure')).toHaveLength(37);
    // The local count, by contrast, is one process's: a second process would admit 3 more.
    const local = new LocalGraceExposure();
    const alone = await Promise.all(Array.from({ length: 20 }, () => local.reserve(base())));
    expect(alone.filter((d) => d === 'admitted')).toHaveLength(3);
  });

  it('rounds against the caller: an amount up, the room and cap down to whole µUSD', async () => {
    const shared = await redisExposure(prefix());
    // 2.5 µUSD each against a cap of 5.9 µUSD: rounded to 3 and 5, one fits.
    const request = base({ amount: 2500n, maxExposure: 5900n });
    expect(await shared.reserve(request)).toBe('admitted');
    expect(await shared.reserve(request)).toBe('grace_exposure');
  });

  it('the counters lapse ttl after the last admission; ended() leaves them to that', async () => {
    const shared = await redisExposure(prefix());
    const request = base({ ttlMs: 300 });
    for (let i = 0; i < 3; i++) expect(await shared.reserve(request)).toBe('admitted');
    shared.ended();
    expect(await shared.reserve(request)).toBe('grace_exposure');
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(await shared.reserve(request)).toBe('admitted');
    const local = new LocalGraceExposure();
    for (let i = 0; i < 3; i++) expect(await local.reserve(base())).toBe('admitted');
    expect(await local.reserve(base())).toBe('grace_exposure');
    local.ended();
    expect(await local.reserve(base())).toBe('admitted');
  });

  it('a refusal keeps the counters alive: a process still in its grace never finds a fresh count', async () => {
    // Process A reached the cap; process B, which saw the outage later, keeps asking past A's last
    // admission + ttl: each refusal renews the count, so B never gets a second cap.
    const shared = await redisExposure(prefix());
    const request = base({ ttlMs: 300 });
    for (let i = 0; i < 3; i++) expect(await shared.reserve(request)).toBe('admitted');
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await shared.reserve(request)).toBe('grace_exposure');
    }
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(await shared.reserve(request)).toBe('admitted');
    // A refusal for an account with no count leaves no key behind.
    const poor = base({ accountId: 'acct_poor', room: 0n, ttlMs: 300 });
    expect(await shared.reserve(poor)).toBe('grace_not_covered');
    expect(await clients[0]!.exists(shared.key('acct_poor'))).toBe(0);
  });

  it('a balance or key limit of billions is exact (only the cap decides)', async () => {
    const shared = await redisExposure(prefix());
    const huge = base({ room: 50_000_000_000n * UNITS_PER_USD, keyRoom: 20_000_000_000n * UNITS_PER_USD });
    for (let i = 0; i < 3; i++) expect(await shared.reserve(huge)).toBe('admitted');
    expect(await shared.reserve(huge)).toBe('grace_exposure');
  });

  it('Redis unreachable: the reservation fails as store.unavailable (the admission refuses)', async () => {
    const redis = new Redis('redis://127.0.0.1:1', { ...failFastRedisOptions(200), lazyConnect: true });
    clients.push(redis);
    const shared = new RedisGraceExposure({ redis, keyPrefix: prefix(), timeoutMs: 200 });
    await expect(shared.reserve(base())).rejects.toMatchObject({ code: 'store.unavailable' });
  });

  it('a restore admits nothing until it is done, and a retry of a call that did land adds nothing twice', async () => {
    // A private server: pausing the shared one would stall every other test's writes.
    const server = await startPrivateRedis();
    const redis = new Redis(server.url, failFastRedisOptions(200));
    const admin = new Redis(server.url, failFastRedisOptions(2000));
    const grace = new RedisGraceExposure({ redis, keyPrefix: prefix(), timeoutMs: 200 });
    try {
      for (const c of [redis, admin])
        if (c.status !== 'ready') await new Promise((resolve) => c.once('ready', resolve));
      const request = base({ keyRoom: 10_000n * MICRO });
      expect(await grace.reserve(request)).toBe('admitted');
      expect(await grace.reserve(request)).toBe('admitted');
      await redis.del(grace.key('acct_a')); // the count lost, as in a Redis that came back empty
      // Writes wait 700 ms: the restore's first calls time out here, yet each runs once Redis resumes.
      await admin.call('CLIENT', 'PAUSE', '700', 'WRITE');
      const restoring = grace.restore();
      await expect(grace.reserve(request)).rejects.toMatchObject({
        code: 'store.unavailable',
        metadata: { reason: 'redis_resyncing' },
      });
      await restoring;
      const restored = await admin.hgetall(grace.key('acct_a'));
      expect([restored.a, restored['k:k1']]).toEqual(['2000', '2000']);
      expect(Object.keys(restored).filter((field) => field.startsWith('r:'))).toHaveLength(1);
      expect(await grace.reserve(request)).toBe('admitted'); // the cap is 3: one more, and no fourth
      expect(await grace.reserve(request)).toBe('grace_exposure');
    } finally {
      await grace.close();
      for (const c of [redis, admin]) c.disconnect();
      await server.destroy();
    }
  });

  it('Redis restarted without its data: refused while the fleet resyncs, then each process has put its admissions back', async () => {
    const { server, processes, trusted } = await privateFleet(1_500);
    const [a, b] = processes;
    try {
      await trusted();
      const request = base({ keyRoom: 10_000n * MICRO });
      // Cap 3: A admits two, B one.
      expect(await a.grace.reserve(request)).toBe('admitted');
      expect(await a.grace.reserve(request)).toBe('admitted');
      expect(await b.grace.reserve(request)).toBe('admitted');
      expect(await b.grace.reserve(request)).toBe('grace_exposure');
      expect(a.grace.admissions().get('acct_a')?.total).toBe(2000n);

      await server.stop();
      await server.start(); // empty, as a restart without persistence leaves it
      // Until the fleet has seen the new epoch and its window is over, nobody admits under grace.
      await expect(a.grace.reserve(request)).rejects.toMatchObject({ code: 'store.unavailable' });
      while (a.redis.status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 10));
      await a.fleet.heartbeat();
      expect(a.fleet.trusted).toBe(false); // the new epoch's window, on a live connection
      await expect(a.grace.reserve(request)).rejects.toMatchObject({
        code: 'store.unavailable',
        metadata: { reason: 'redis_resyncing' },
      });
      await trusted();
      // The counts, and one restore marker per process (a retried restore adds nothing twice).
      const restored = await a.redis.hgetall(a.grace.key('acct_a'));
      expect([restored.a, restored['k:k1']]).toEqual(['3000', '3000']);
      expect(Object.keys(restored).filter((field) => field.startsWith('r:'))).toHaveLength(2);
      expect(await a.redis.pttl(a.grace.key('acct_a'))).toBeGreaterThan(50_000);
      // The fleet's cap still holds: no second allowance.
      expect(await a.grace.reserve(request)).toBe('grace_exposure');
      expect(await b.grace.reserve(request)).toBe('grace_exposure');
    } finally {
      await closeFleet(server, processes);
    }
  });

  it('Redis emptied on a live connection between heartbeats: the next grace request finds its count short, and nothing is admitted until the shares are back', async () => {
    // Heartbeats a minute apart: only the admission itself can notice.
    const { server, processes, trusted } = await privateFleet(300, 60_000);
    const [a, b] = processes;
    try {
      await trusted();
      const request = base();
      expect(await a.grace.reserve(request)).toBe('admitted');
      expect(await a.grace.reserve(request)).toBe('admitted');
      expect(await b.grace.reserve(request)).toBe('admitted'); // the cap (3) reached
      await a.redis.flushall();
      await expect(a.grace.reserve(request)).rejects.toMatchObject({
        code: 'store.unavailable',
        metadata: { reason: 'redis_resyncing' },
      });
      // B has not looked yet: its own request finds the count short of its share too.
      await expect(b.grace.reserve(request)).rejects.toMatchObject({ metadata: { reason: 'redis_resyncing' } });
      await new Promise((resolve) => setTimeout(resolve, 400));
      await Promise.all(processes.map((p) => p.fleet.heartbeat()));
      await trusted();
      expect(await a.redis.hget(a.grace.key('acct_a'), 'a')).toBe('3000');
      expect(await a.grace.reserve(request)).toBe('grace_exposure');
    } finally {
      await closeFleet(server, processes);
    }
  });

  it('Redis emptied between heartbeats, then a process with no admissions of its own there: it looks before admitting', async () => {
    // Heartbeats a minute apart: only the admission itself can notice. A filled the cap; B never admitted.
    const { server, processes, trusted } = await privateFleet(300, 60_000);
    const [a, b] = processes;
    try {
      await trusted();
      const request = base();
      for (let i = 0; i < 3; i++) expect(await a.grace.reserve(request)).toBe('admitted');
      await a.redis.flushall();
      // Before, B found no count, no epoch mark and no share of its own, and admitted three more.
      await expect(b.grace.reserve(request)).rejects.toMatchObject({ metadata: { reason: 'redis_resyncing' } });
      await new Promise((resolve) => setTimeout(resolve, 400));
      await Promise.all(processes.map((p) => p.fleet.heartbeat()));
      await trusted();
      expect(await b.grace.reserve(request)).toBe('grace_exposure');
    } finally {
      await closeFleet(server, processes);
    }
  });

  it('a process remembers its admissions while another process keeps the count alive, and forgets them once it lapses', async () => {
    const { server, processes, trusted } = await privateFleet(300);
    const [a, b] = processes;
    try {
      await trusted();
      const request = base({ maxExposure: 2000n * MICRO, ttlMs: 1500 });
      // A admits and stops asking; B, later, admits and keeps the count alive past A's last request + ttl.
      expect(await a.grace.reserve(request)).toBe('admitted');
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(await b.grace.reserve(request)).toBe('admitted');
      await new Promise((resolve) => setTimeout(resolve, 900)); // A's own request + ttl has passed
      await a.grace.refresh();
      expect(a.grace.admissions().get('acct_a')?.total).toBe(1000n); // the count still lives: kept

      // B keeps asking (refused at the cap: the count is renewed) until A's extended life has passed too.
      expect(await b.grace.reserve(request)).toBe('grace_exposure');
      await new Promise((resolve) => setTimeout(resolve, 700));
      // Redis loses its data without dropping the connection (a failover behind a proxy): a refresh
      // before the fleet's next heartbeat finds the count gone, and must not forget A's share for that.
      await a.redis.flushall();
      await a.grace.refresh();
      expect(a.grace.admissions().get('acct_a')?.total).toBe(1000n);
      const deadline = Date.now() + 10_000;
      while (a.fleet.trusted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await trusted(); // the new epoch seen and its window over: both processes restored
      // Both shares are back: the cap (2) is reached, no third admission.
      expect(await a.redis.hget(a.grace.key('acct_a'), 'a')).toBe('2000');
      expect(await b.grace.reserve(request)).toBe('grace_exposure');

      // Once the count lapses for good, refresh forgets it — on a second sighting, seconds apart.
      while ((await a.redis.exists(a.grace.key('acct_a'))) === 1 && Date.now() < deadline + 10_000)
        await new Promise((resolve) => setTimeout(resolve, 50));
      await a.grace.refresh();
      expect(a.grace.admissions().size).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 2600));
      await a.grace.refresh();
      expect(a.grace.admissions().size).toBe(0);
    } finally {
      await closeFleet(server, processes);
    }
  });
});
