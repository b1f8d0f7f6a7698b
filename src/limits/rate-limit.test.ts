import { describe, expect, it } from 'vitest';
import {
  assertValidCall,
  counterId,
  counterTtlMs,
  decide,
  pivotIndex,
  rateLimitHeaders,
  type RateRule,
} from './rate-limit.js';

const T0 = Date.UTC(2026, 10, 18, 12);
const MIDNIGHT = Date.UTC(2026, 10, 19);
const minute: RateRule = { name: 'per_minute', kind: 'sliding', limit: 20, windowMs: 60_000 };
const day: RateRule = { name: 'per_day', kind: 'utc_day', limit: 50 };

describe('decide', () => {
  it('admits when every rule has room and reports the tightest rule after consuming', () => {
    expect(
      decide(
        [minute, day],
        [
          { used: 3, pivot: T0 - 10_000 },
          { used: 48, pivot: null },
        ],
        T0,
      ),
    ).toEqual({
      allowed: true,
      rule: day,
      limit: 50,
      remaining: 1,
      resetAt: MIDNIGHT,
      retryAfterMs: 0,
    });
  });

  it('an empty log resets one window after the request it admits', () => {
    expect(decide([minute], [{ used: 0, pivot: null }], T0)).toMatchObject({ remaining: 19, resetAt: T0 + 60_000 });
  });

  it('refuses with the refusing rule, its pivot + window as resetAt, and retryAfterMs to match', () => {
    expect(
      decide(
        [minute, day],
        [
          { used: 20, pivot: T0 - 45_000 },
          { used: 10, pivot: null },
        ],
        T0,
      ),
    ).toEqual({
      allowed: false,
      rule: minute,
      limit: 20,
      remaining: 0,
      resetAt: T0 + 15_000,
      retryAfterMs: 15_000,
    });
  });

  it('with several refusals reports the one that frees latest', () => {
    expect(
      decide(
        [minute, day],
        [
          { used: 20, pivot: T0 - 45_000 },
          { used: 50, pivot: null },
        ],
        T0,
      ).rule,
    ).toBe(day);
  });

  it('rejects readings that do not match the rules', () => {
    expect(() => decide([minute, day], [{ used: 0, pivot: null }], T0)).toThrow(/expected 2 readings/);
  });
});

describe('counter identity and lifetime', () => {
  it('puts the UTC day into a day counter and nothing time-based into a sliding one', () => {
    expect(counterId(day, MIDNIGHT - 1)).toBe('per_day:2026-11-18');
    expect(counterId(day, MIDNIGHT)).toBe('per_day:2026-11-19');
    expect(counterId(minute, T0)).toBe('per_minute');
  });

  it('lives for its window, or until the day ends, plus the skew allowance', () => {
    expect(counterTtlMs(minute, T0, 5_000)).toBe(65_000);
    expect(counterTtlMs(day, MIDNIGHT - 1_000, 5_000)).toBe(6_000);
  });

  it('pivots on the entry whose expiry brings usage back under the limit', () => {
    expect(pivotIndex(5, 20)).toBe(0);
    expect(pivotIndex(20, 20)).toBe(0);
    expect(pivotIndex(25, 20)).toBe(5);
  });
});

describe('assertValidCall', () => {
  it.each([
    [[], T0, /at least one/],
    [[minute, minute], T0, /duplicate/],
    [[{ ...minute, name: 'per:minute' }], T0, /invalid rate rule name/],
    [[{ ...minute, limit: 0 }], T0, /limit must be a positive integer/],
    [[{ ...minute, windowMs: 1.5 }], T0, /windowMs/],
    [[minute], T0 + 0.5, /integer/],
  ] as const)('rejects %j at %d', (rules, now, message) => {
    expect(() => assertValidCall(rules as readonly RateRule[], now)).toThrow(message);
  });
});

describe('rateLimitHeaders', () => {
  it('describes the limit hit, with Retry-After in whole seconds for a per-minute limit', () => {
    const decision = decide(
      [minute, day],
      [
        { used: 20, pivot: T0 - 58_500 },
        { used: 1, pivot: null },
      ],
      T0,
    );
    expect(rateLimitHeaders(decision)).toEqual({
      'X-RateLimit-Limit': '20',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(T0 + 1_500),
      'Retry-After': '2',
    });
  });

  it('has no Retry-After for the daily cap', () => {
    const decision = decide(
      [minute, day],
      [
        { used: 1, pivot: T0 },
        { used: 50, pivot: null },
      ],
      T0,
    );
    expect(rateLimitHeaders(decision)).toEqual({
      'X-RateLimit-Limit': '50',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(MIDNIGHT),
    });
  });
});
