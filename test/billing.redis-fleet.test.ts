/**
 * `RedisFleet`'s trust as its listeners hear it (docs/architecture.md, "Redis outages"), against a
 * private Redis the test stops: every loss of trust is a new outage to them, also one that comes after
 * a resync window ended between two heartbeats.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisFleet } from '../src/store/redis-fleet.js';
import { failFastRedisOptions } from '../src/store/redis-script-client.js';
import { startPrivateRedis, type PrivateRedis } from './helpers/private-redis.js';

describe('RedisFleet trust changes', { timeout: 30_000 }, () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(() => redis?.destroy());

  it('Redis emptied (a new epoch, same connection) after a window ended between heartbeats: heard as trusted, then not', async () => {
    const client = new Redis(redis.url, failFastRedisOptions(500));
    client.on('error', () => undefined);
    const fleet = new RedisFleet({ redis: client, keyPrefix: 'fleet-epoch:', heartbeatMs: 60_000, resyncMs: 200 });
    const heard: boolean[] = [];
    fleet.onTrustChange((trusted) => heard.push(trusted));
    try {
      await fleet.start();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(fleet.trusted).toBe(true);
      await client.flushall(); // a failover to an empty replica, as the heartbeat finds it
      await fleet.heartbeat();
      expect(heard).toEqual([true, false]);
      expect(fleet.trusted).toBe(false); // the new epoch's window
    } finally {
      await fleet.stop();
      client.disconnect();
    }
  });

  it('Redis emptied: the first process to look does not count itself alone while the others re-register', async () => {
    const clients = [0, 1].map(() => {
      const client = new Redis(redis.url, failFastRedisOptions(500));
      client.on('error', () => undefined);
      return client;
    });
    const [a, b] = clients.map(
      (client) => new RedisFleet({ redis: client, keyPrefix: 'fleet-size:', heartbeatMs: 60_000, resyncMs: 300 }),
    ) as [RedisFleet, RedisFleet];
    try {
      await a.start();
      await b.start();
      await new Promise((resolve) => setTimeout(resolve, 400));
      await a.heartbeat();
      expect([a.size, a.trusted]).toEqual([2, true]);
      await clients[0]!.flushall();
      await a.checkNow(); // the lease set holds only A now, inside the new epoch's window
      expect(a.trusted).toBe(false);
      expect(a.size).toBe(2); // a share taken now is a half, not the whole balance
      await new Promise((resolve) => setTimeout(resolve, 400));
      await b.heartbeat();
      await a.heartbeat();
      expect([a.size, a.trusted]).toEqual([2, true]);
    } finally {
      await a.stop();
      await b.stop();
      for (const client of clients) client.disconnect();
    }
  });

  it('a Redis never reached is reported once, as never reached, however many heartbeats fail', async () => {
    const client = new Redis('redis://127.0.0.1:1', { ...failFastRedisOptions(100), lazyConnect: true });
    client.on('error', () => undefined);
    const told: boolean[] = [];
    const fleet = new RedisFleet({
      redis: client,
      keyPrefix: 'fleet-unseen:',
      heartbeatMs: 60_000,
      timeoutMs: 100,
      onUnreachable: (_error, seen) => told.push(seen),
    });
    try {
      await fleet.start();
      for (let i = 0; i < 4; i++) await fleet.heartbeat();
      expect(told).toEqual([false]);
      expect(fleet.seen).toBe(false);
    } finally {
      await fleet.stop();
      client.disconnect();
    }
  });

  it('a connection lost after a resync window ended between heartbeats: heard as trusted, then not', async () => {
    const client = new Redis(redis.url, failFastRedisOptions(500));
    client.on('error', () => undefined);
    // Heartbeats far apart: the window (from the fresh Redis's first epoch) ends between two of them.
    const fleet = new RedisFleet({ redis: client, keyPrefix: 'fleet-test:', heartbeatMs: 60_000, resyncMs: 200 });
    const heard: boolean[] = [];
    fleet.onTrustChange((trusted) => heard.push(trusted));
    try {
      await fleet.start();
      expect(fleet.trusted).toBe(false); // inside the first epoch's window
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(fleet.trusted).toBe(true); // by the clock, no heartbeat since
      expect(heard).toEqual([]);
      await redis.stop();
      const deadline = Date.now() + 5_000;
      while (heard.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard).toEqual([true, false]);
      expect(fleet.trusted).toBe(false);
    } finally {
      await fleet.stop();
      client.disconnect();
      await redis.start();
    }
  });
});
