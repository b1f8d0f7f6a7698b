import type { HoldStore } from '../../src/billing/hold-store.js';
import { MemoryHoldStore } from '../../src/billing/memory-hold-store.js';
import { RedisHoldStore } from '../../src/billing/redis-hold-store.js';
import { deleteKeys, REDIS_TEST_URL, uniqueTestPrefix } from './limiter-targets.js';

/** One shared hold space; `open()` gives another handle on it (another process, for Redis). */
export interface HoldSpace {
  open(): Promise<HoldStore>;
  cleanup(): Promise<void>;
}

export interface HoldTarget {
  name: 'memory' | 'redis';
  createSpace(): Promise<HoldSpace>;
}

export const memoryHoldTarget: HoldTarget = {
  name: 'memory',
  async createSpace() {
    // One process holds one in-memory store: every handle is the same instance.
    const store = new MemoryHoldStore();
    return { open: async () => store, cleanup: () => store.close() };
  },
};

export const redisHoldTarget: HoldTarget = {
  name: 'redis',
  async createSpace() {
    const keyPrefix = uniqueTestPrefix();
    const opened: RedisHoldStore[] = [];
    return {
      async open() {
        const store = new RedisHoldStore({ url: REDIS_TEST_URL, keyPrefix, timeoutMs: 2_000 });
        opened.push(store);
        await store.ready();
        return store;
      },
      async cleanup() {
        await deleteKeys(REDIS_TEST_URL, keyPrefix);
        await Promise.allSettled(opened.map((store) => store.close()));
      },
    };
  },
};

/** Both hold stores; without Redis outside CI (test/service-availability.ts), the in-memory one only. */
export const HOLD_TARGETS: readonly HoldTarget[] = process.env.TOLLGATE_TEST_NO_REDIS
  ? [memoryHoldTarget]
  : [memoryHoldTarget, redisHoldTarget];
