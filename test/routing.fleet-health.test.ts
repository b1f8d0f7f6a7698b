/**
 * Endpoint health shared through Redis pub/sub (docs/architecture.md, "Fleet-wide endpoint health"):
 * two processes' registries, each with its own FleetHealth and Redis connections, on one channel.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetHealth } from '../src/routing/fleet-health.js';
import { HealthRegistry } from '../src/routing/health.js';
import { RedisHealthChannel } from '../src/store/redis-health-channel.js';
import { failFastRedisOptions } from '../src/store/redis-script-client.js';
import { REDIS_TEST_URL } from './helpers/limiter-targets.js';

const KEY = HealthRegistry.keyOf('test/m', 'a');
const BYOK_KEY = `${KEY}|byok:cred1`;
const BREAKER = { failureThreshold: 3, openMs: 5_000, maxOpenMs: 15_000, probeTimeoutMs: 60_000 };

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function process_(channel: string) {
  const publisher = new Redis(REDIS_TEST_URL, failFastRedisOptions(500));
  await new Promise((resolve) => publisher.once('ready', resolve));
  const health = new HealthRegistry(BREAKER);
  const fleet = new FleetHealth({
    health,
    channel: new RedisHealthChannel({ publisher, url: REDIS_TEST_URL, channel }),
    now: Date.now,
    knows: (key) => key === KEY,
    outcomeEveryMs: 100,
  });
  closers.push(async () => {
    await fleet.close();
    publisher.disconnect();
  });
  return health;
}

async function until(check: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('not within time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('fleet-wide endpoint health over Redis', () => {
  it('a breaker tripped on one process is open on the other; a success anywhere closes both', async () => {
    const channel = `tollgate:test:${randomBytes(4).toString('hex')}:health`;
    const [a, b] = [await process_(channel), await process_(channel)];
    await new Promise((resolve) => setTimeout(resolve, 100)); // both subscribed
    const now = Date.now();
    for (let i = 0; i < 3; i++) a.recordFailure(KEY, now, 'server', null);
    expect(a.rank(KEY, Date.now())).toBe(2);
    await until(() => b.rank(KEY, Date.now()) === 2);
    expect(b.tryAcquire(KEY, Date.now())).toBe(false); // b skips it without having seen a failure
    a.recordSuccess(KEY, Date.now(), 100, null); // a probe succeeded on a
    await until(() => b.state(KEY, Date.now()) === 'closed');
  });

  it('a Retry-After cool-down and uptime outcomes reach the other process; BYOK health stays private', async () => {
    const channel = `tollgate:test:${randomBytes(4).toString('hex')}:health`;
    const [a, b] = [await process_(channel), await process_(channel)];
    await new Promise((resolve) => setTimeout(resolve, 100));
    a.recordFailure(KEY, Date.now(), 'rate_limited', 30_000);
    await until(() => b.rank(KEY, Date.now()) === 1);
    for (let i = 0; i < 3; i++) a.recordSuccess(KEY, Date.now(), 50, null);
    a.recordFailure(KEY, Date.now(), 'server', null);
    await until(() => b.snapshot(KEY, Date.now())?.uptime5m === 75);
    for (let i = 0; i < 3; i++) a.recordFailure(BYOK_KEY, Date.now(), 'server', null);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(b.rank(BYOK_KEY, Date.now())).toBe(0);
  });

  it('garbage on the channel changes nothing', async () => {
    const channel = `tollgate:test:${randomBytes(4).toString('hex')}:health`;
    const b = await process_(channel);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const raw = new Redis(REDIS_TEST_URL);
    try {
      for (const junk of [
        'not json',
        '{"from":"x"}',
        JSON.stringify({
          from: 'x',
          events: [
            { type: 'opened', key: KEY, ms: -5 },
            { type: 'opened', key: 'other|x', ms: 1000 },
            { type: 'outcomes', key: KEY, ok: 1.5, failed: 0 },
          ],
        }),
      ]) {
        await raw.publish(channel, junk);
      }
      await raw.publish(channel, JSON.stringify({ from: 'x', events: [{ type: 'opened', key: KEY, ms: 10_000 }] })); // the last one is valid
      await until(() => b.rank(KEY, Date.now()) === 2);
      expect(b.snapshot(KEY, Date.now())?.uptime5m ?? null).toBeNull();
      expect(b.rank('other|x', Date.now())).toBe(0);
    } finally {
      raw.disconnect();
    }
  });
});
