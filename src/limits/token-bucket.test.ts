import { describe, expect, it } from 'vitest';
import { fullAt, refill, take, TokenBucketLimiter, type TokenBucketConfig } from './token-bucket.js';

const config: TokenBucketConfig = { capacity: 5, refillPerSecond: 2 };
const T0 = 1_000_000;

describe('token bucket math', () => {
  it('starts full and allows a burst of exactly `capacity`', () => {
    let state = refill(undefined, config, T0);
    expect(state.tokens).toBe(5);
    const results = [];
    for (let i = 0; i < 6; i++) {
      const result = take(state, config, T0);
      state = result.state;
      results.push(result.allowed);
    }
    expect(results).toEqual([true, true, true, true, true, false]);
  });

  it('refills at the configured rate, capped at capacity', () => {
    const empty = { tokens: 0, updatedAt: T0 };
    expect(refill(empty, config, T0 + 250).tokens).toBe(0.5);
    expect(refill(empty, config, T0 + 1_000).tokens).toBe(2);
    expect(refill(empty, config, T0 + 60_000).tokens).toBe(5);
  });

  it('tells how long until the next token when refusing', () => {
    const result = take({ tokens: 0.5, updatedAt: T0 }, config, T0);
    expect(result).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 250 });
    expect(take(result.state, config, T0 + 250).allowed).toBe(true);
  });

  it('refills nothing when the clock steps backwards', () => {
    const state = refill({ tokens: 1, updatedAt: T0 }, config, T0 - 10_000);
    expect(state).toEqual({ tokens: 1, updatedAt: T0 });
  });

  it('knows when a bucket is full again', () => {
    expect(fullAt({ tokens: 3, updatedAt: T0 }, config)).toBe(T0 + 1_000);
  });

  it('rejects a cost above capacity', () => {
    expect(() => take(undefined, config, T0, 6)).toThrow(/cost/);
  });
});

describe('TokenBucketLimiter', () => {
  it('limits each key separately', () => {
    const limiter = new TokenBucketLimiter(config);
    for (let i = 0; i < 5; i++) expect(limiter.take('10.0.0.1', T0).allowed).toBe(true);
    expect(limiter.take('10.0.0.1', T0)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 500 });
    expect(limiter.take('10.0.0.2', T0)).toEqual({ allowed: true, remaining: 4, retryAfterMs: 0 });
    expect(limiter.take('10.0.0.1', T0 + 500).allowed).toBe(true);
  });

  it('forgets buckets once they are full again, so memory follows active keys', () => {
    const limiter = new TokenBucketLimiter(config, { sweepEveryMs: 1_000 });
    for (let i = 0; i < 1_000; i++) limiter.take(`ip-${i}`, T0);
    expect(limiter.size).toBe(1_000);
    limiter.take('late', T0 + 10_000);
    expect(limiter.size).toBe(1);
    expect(limiter.evictions).toBe(0);
  });

  it('never holds more than maxKeys buckets under a flood of distinct keys', () => {
    const limiter = new TokenBucketLimiter(config, { maxKeys: 100 });
    for (let i = 0; i < 10_000; i++) limiter.take(`ip-${i}`, T0);
    expect(limiter.size).toBe(100);
    expect(limiter.evictions).toBe(9_900);
  });

  it('rejects a nonsensical configuration at construction', () => {
    expect(() => new TokenBucketLimiter({ capacity: 0, refillPerSecond: 1 })).toThrow(/capacity/);
    expect(() => new TokenBucketLimiter({ capacity: 1, refillPerSecond: 0 })).toThrow(/refillPerSecond/);
  });
});
