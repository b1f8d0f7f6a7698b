/**
 * A Redis that may evict keys under memory pressure (`maxmemory-policy` other than `noeviction`) could
 * drop a hold or a grace count while the fleet's epoch key stays: the gateway says so at boot (an
 * outside check spent a second grace cap through an evicted count).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { buildOnce, startServe, waitForOutput } from './helpers/process.js';

describe('Redis that may evict keys', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    await buildOnce();
    redis = await startPrivateRedis();
    const client = new Redis(redis.url);
    await client.config('SET', 'maxmemory-policy', 'allkeys-lru');
    client.disconnect();
  }, 200_000);
  afterAll(async () => {
    await redis?.destroy();
  });

  it('is named at boot with its policy and the fix', async () => {
    const gw = await startServe({ REDIS_URL: redis.url });
    try {
      await waitForOutput(gw, /maxmemory-policy/);
      const line = gw
        .stdout()
        .split('\n')
        .find((l) => l.includes('maxmemory-policy'))!;
      expect(JSON.parse(line)).toMatchObject({ level: 40, maxmemory_policy: 'allkeys-lru' });
      expect(line).toContain('set maxmemory-policy noeviction');
    } finally {
      await gw.stop();
    }
  }, 60_000);
});
