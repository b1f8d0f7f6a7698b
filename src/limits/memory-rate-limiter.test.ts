import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from './memory-rate-limiter.js';
import type { RateRule } from './rate-limit.js';

const T0 = Date.UTC(2026, 10, 18, 12);
const rules: RateRule[] = [
  { name: 'per_minute', kind: 'sliding', limit: 20, windowMs: 60_000 },
  { name: 'per_day', kind: 'utc_day', limit: 50 },
];

// The behaviour is the contract suite's (test/limits.rate-limiter.contract.test.ts); this is memory only.
describe('MemoryRateLimiter memory bounds', () => {
  it('drops counters whose window ended', async () => {
    const limiter = new MemoryRateLimiter({ sweepEveryMs: 1_000 });
    for (let i = 0; i < 500; i++) await limiter.consume(`acct_${i}`, rules, T0);
    expect(limiter.size).toBe(1_000); // a minute log and a day counter each

    await limiter.consume('acct_late', rules, T0 + 86_400_000);
    expect(limiter.size).toBe(2);
    expect(limiter.evictions).toBe(0);
  });

  it('never holds more than maxCounters, dropping the least recently used', async () => {
    const limiter = new MemoryRateLimiter({ maxCounters: 10 });
    for (let i = 0; i < 1_000; i++) await limiter.consume(`acct_${i}`, rules, T0);
    expect(limiter.size).toBe(10);
    expect(await limiter.peek('acct_999', rules, T0)).toMatchObject([{ used: 1 }, { used: 1 }]);
  });

  it('trims a sliding log to its window, so an account holds at most `limit` timestamps', async () => {
    const limiter = new MemoryRateLimiter();
    for (let i = 0; i < 200; i++) await limiter.consume('acct', rules.slice(0, 1), T0 + i * 3_000);
    expect(await limiter.peek('acct', rules.slice(0, 1), T0 + 199 * 3_000)).toMatchObject([{ used: 20 }]);
  });
});
