import { describe, expect, it } from 'vitest';
import { TollgateError } from '../core/errors.js';
import { usdToUnits } from '../core/money.js';
import { FREE_PER_DAY, FREE_PER_MINUTE, FreeModelPolicy, type FreeModelLimits } from './free-model-policy.js';
import { MemoryRateLimiter } from './memory-rate-limiter.js';
import type { RateLimiter } from './rate-limit.js';
import type { RequestCapacity } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';

const T0 = Date.UTC(2026, 10, 18, 12);
const LIMITS: FreeModelLimits = {
  per_minute: 20,
  per_day: 50,
  per_day_with_credits: 1000,
  credits_threshold: 10,
  on_store_error: 'closed',
};
const poor = { id: 'acct_poor', totalPurchased: usdToUnits(9.99) };
const rich = { id: 'acct_rich', totalPurchased: usdToUnits(10) };

function policy(overrides: { limiter?: RateLimiter; limits?: Partial<FreeModelLimits>; clock?: { t: number } } = {}) {
  const clock = overrides.clock ?? { t: T0 };
  const warnings: unknown[] = [];
  const refused: string[] = [];
  const p = new FreeModelPolicy({
    limiter: overrides.limiter ?? new MemoryRateLimiter(),
    limits: { ...LIMITS, ...overrides.limits },
    now: () => clock.t,
    log: { info: () => undefined, error: () => undefined, warn: (obj) => warnings.push(obj) },
    store: 'memory',
    onRefused: (limit) => refused.push(limit),
  });
  return { p, clock, warnings, refused };
}

const unavailable = (): never => {
  throw new TollgateError('store.unavailable', 'down');
};
const brokenLimiter: RateLimiter = {
  consume: async () => unavailable(),
  peek: async () => unavailable(),
  refund: async () => unavailable(),
  consumeWeighted: async () => unavailable(),
  adjustWeighted: async () => unavailable(),
  close: async () => undefined,
};

async function refusalOf(work: Promise<unknown>): Promise<TollgateError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TollgateError);
  return error as TollgateError;
}

describe('FreeModelPolicy', () => {
  it('picks 50 or 1000 a day by credits purchased, under one counter name', () => {
    const { p } = policy();
    expect(p.rules(poor).map((r) => [r.name, r.limit])).toEqual([
      [FREE_PER_MINUTE, 20],
      [FREE_PER_DAY, 50],
    ]);
    expect(p.rules(rich).map((r) => [r.name, r.limit])).toEqual([
      [FREE_PER_MINUTE, 20],
      [FREE_PER_DAY, 1000],
    ]);
  });

  it('refuses the 21st request in a minute with the X-RateLimit-* headers, Retry-After and the §5 metadata', async () => {
    const { p, clock, refused } = policy();
    for (let i = 0; i < 20; i++) {
      clock.t = T0 + i * 100;
      expect(await p.admit(poor)).not.toBeNull();
    }
    clock.t = T0 + 2_500;
    const error = await refusalOf(p.admit(poor));
    expect(error.code).toBe('limits.rate_limited');
    expect(error.headers).toEqual({
      'X-RateLimit-Limit': '20',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(T0 + 60_000),
      'Retry-After': '58',
    });
    expect(error.metadata).toEqual({
      error_type: 'rate_limit_exceeded',
      limit_source: FREE_PER_MINUTE,
      headers: { 'X-RateLimit-Limit': '20', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(T0 + 60_000) },
    });
    expect(error.message).toContain('free-models-per-min');
    expect(refused).toEqual([FREE_PER_MINUTE]);
  });

  it('refuses past the daily cap until midnight (no Retry-After), and a purchase raises the cap over the same count', async () => {
    const { p, clock } = policy({ limits: { per_minute: 1000 } });
    for (let i = 0; i < 50; i++) await p.admit(poor);
    const error = await refusalOf(p.admit(poor));
    expect(error.metadata?.limit_source).toBe(FREE_PER_DAY);
    expect(error.headers).toEqual({
      'X-RateLimit-Limit': '50',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(Date.UTC(2026, 10, 19)),
    });
    expect(error.message).toContain('Add 10 credits to unlock 1000');
    expect(await p.daily(poor)).toEqual({ limit: 50, used: 50, remaining: 0 });

    const sameAccountAfterPurchase = { ...poor, totalPurchased: usdToUnits(10) };
    expect(await p.admit(sameAccountAfterPurchase)).not.toBeNull();
    expect(await p.daily(sameAccountAfterPurchase)).toEqual({ limit: 1000, used: 51, remaining: 949 });
    clock.t = Date.UTC(2026, 10, 19, 0, 0, 1);
    expect(await p.daily(poor)).toEqual({ limit: 50, used: 0, remaining: 50 });
  });

  it('a request takes its slot once, before its first free attempt; a refusal skips its free attempts, not its paid ones', async () => {
    const { p } = policy({ limits: { per_minute: 1 } });
    const paid = { model: { isFree: false } } as PlannedAttempt;
    const free = { model: { isFree: true } } as PlannedAttempt;
    const account = () => Promise.resolve(poor);
    const calls: string[] = [];
    const inner: RequestCapacity = {
      acquire: (planned) => (calls.push(`acquire ${planned.model.isFree}`), Promise.resolve(null)),
      ended: (planned, answered) => void calls.push(`ended ${planned.model.isFree} ${answered}`),
      withdraw: (planned) => void calls.push(`withdraw ${planned.model.isFree}`),
      settle: () => undefined,
    };
    expect(p.forRequest([paid], account, inner)).toBe(inner); // no free model: nothing to claim

    const first = p.forRequest([paid, free, free], account, inner)!;
    expect(await first.acquire(paid, T0)).toBeNull();
    expect((await p.daily(poor)).used).toBe(0); // a paid attempt takes no slot
    expect(await first.acquire(free, T0)).toBeNull();
    expect(await first.acquire(free, T0)).toBeNull(); // a retry of the same request: no second slot
    expect((await p.daily(poor)).used).toBe(1);

    calls.length = 0;
    const second = p.forRequest([free, paid], account, inner)!;
    const refusal = await second.acquire(free, T0);
    expect(refusal?.error.code).toBe('limits.rate_limited');
    expect(refusal?.retryAt).toBe(Number.POSITIVE_INFINITY); // never waited for
    expect(calls).toEqual(['acquire true', 'withdraw true']); // the capacity claim is undone, its request too
    expect(await second.acquire(free, T0)).toBe(refusal); // not asked again
    expect(await second.acquire(paid, T0)).toBeNull(); // the paid fallback still goes
  });

  it('store unreachable, closed: free requests and the daily view fail with 503 (store.unavailable)', async () => {
    const { p } = policy({ limiter: brokenLimiter });
    expect((await refusalOf(p.admit(poor))).code).toBe('store.unavailable');
    expect((await refusalOf(p.daily(poor))).code).toBe('store.unavailable');
  });

  it('store unreachable, open: requests pass uncounted and the warning is logged once per interval', async () => {
    const { p, clock, warnings } = policy({ limiter: brokenLimiter, limits: { on_store_error: 'open' } });
    for (let i = 0; i < 5; i++) expect(await p.admit(poor)).toBeNull();
    expect(await p.daily(poor)).toEqual({ limit: 50, used: 0, remaining: 50 });
    expect(warnings).toHaveLength(1);
    clock.t += 60_000;
    await p.admit(poor);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatchObject({ suppressed: 5 });
  });

  it('a programming error from the limiter is not mistaken for an outage', async () => {
    const bad: RateLimiter = { ...brokenLimiter, consume: async () => Promise.reject(new Error('bug')) };
    const { p } = policy({ limiter: bad, limits: { on_store_error: 'open' } });
    await expect(p.admit(poor)).rejects.toThrow('bug');
  });
});
