import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { MemoryRateLimiter } from '../../src/limits/memory-rate-limiter.js';
import type { RateLimiter } from '../../src/limits/rate-limit.js';
import { RedisRateLimiter } from '../../src/limits/redis-rate-limiter.js';

/** Local test server. Override with TOLLGATE_TEST_REDIS_URL. */
export const REDIS_TEST_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** One shared limit space; `open()` gives another handle on it (another process, for Redis). */
export interface LimiterSpace {
  open(): Promise<RateLimiter>;
  cleanup(): Promise<void>;
}

export interface LimiterTarget {
  name: 'memory' | 'redis';
  createSpace(): Promise<LimiterSpace>;
}

export const memoryTarget: LimiterTarget = {
  name: 'memory',
  async createSpace() {
    // One process holds one in-memory limiter: every handle is the same instance.
    const limiter = new MemoryRateLimiter();
    return { open: async () => limiter, cleanup: () => limiter.close() };
  },
};

/** Keys of this space only, so concurrent runs and other suites on the same Redis are untouched. */
export function uniqueTestPrefix(): string {
  return `tollgate:test:${randomBytes(6).toString('hex')}:`;
}

export async function deleteKeys(url: string, prefix: string): Promise<number> {
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await admin.del(...keys);
    } while (cursor !== '0');
    return deleted;
  } finally {
    admin.disconnect();
  }
}

export const redisTarget: LimiterTarget = {
  name: 'redis',
  async createSpace() {
    const keyPrefix = uniqueTestPrefix();
    const opened: RedisRateLimiter[] = [];
    return {
      async open() {
        const limiter = new RedisRateLimiter({ url: REDIS_TEST_URL, keyPrefix, timeoutMs: 2_000 });
        opened.push(limiter);
        await limiter.ready();
        return limiter;
      },
      async cleanup() {
        await deleteKeys(REDIS_TEST_URL, keyPrefix);
        await Promise.allSettled(opened.map((limiter) => limiter.close()));
      },
    };
  },
};

/** Both limiters; without Redis outside CI (test/service-availability.ts), the in-memory one only. */
export const LIMITER_TARGETS: readonly LimiterTarget[] = process.env.TOLLGATE_TEST_NO_REDIS
  ? [memoryTarget]
  : [memoryTarget, redisTarget];
