/**
 * One behaviour spec for every RateLimiter (style.md: "One behaviour spec, every implementation").
 * Time is injected: a "minute" passes by changing `now`, never by sleeping.
 */
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import type { RateDecision, RateLimiter, RateRule, WeightedRule } from '../src/limits/rate-limit.js';
import { RedisRateLimiter } from '../src/limits/redis-rate-limiter.js';
import {
  deleteKeys,
  LIMITER_TARGETS,
  REDIS_TEST_URL,
  redisTarget,
  uniqueTestPrefix,
  type LimiterSpace,
} from './helpers/limiter-targets.js';

// Wednesday 2026-11-18 12:00:00 UTC.
const T0 = Date.UTC(2026, 10, 18, 12);
const NEXT_MIDNIGHT = Date.UTC(2026, 10, 19);
const MINUTE = 60_000;

/** The free-model rules of docs/api.md; `daily` is 50, or 1000 once 10 credits were purchased. */
function freeRules(daily = 50): RateRule[] {
  return [
    { name: 'per_minute', kind: 'sliding', limit: 20, windowMs: MINUTE },
    { name: 'per_day', kind: 'utc_day', limit: daily },
  ];
}

let subjects = 0;
/** A fresh account per test, so tests share a limiter without sharing counters. */
const newAccount = (): string => `acct_${++subjects}_${Date.now().toString(36)}`;

async function consumeMany(
  limiter: RateLimiter,
  subject: string,
  count: number,
  at: (i: number) => number,
  rules = freeRules(),
): Promise<RateDecision[]> {
  const decisions: RateDecision[] = [];
  for (let i = 0; i < count; i++) decisions.push(await limiter.consume(subject, rules, at(i)));
  return decisions;
}

const allowedCount = (decisions: readonly RateDecision[]): number => decisions.filter((d) => d.allowed).length;

describe.each(LIMITER_TARGETS)('RateLimiter contract: $name', (target) => {
  let space: LimiterSpace;
  let limiter: RateLimiter;

  beforeAll(async () => {
    space = await target.createSpace();
    limiter = await space.open();
  });

  afterAll(async () => {
    await space?.cleanup();
  });

  it('allows 20 requests in a minute across all keys of the account, refuses the 21st, and leaves other accounts alone', async () => {
    const account = newAccount();
    // Two API keys drawing on one account: the limiter's subject is the account, never the key.
    const accountOfKey: Record<string, string> = { key_a: account, key_b: account };
    const keys = ['key_a', 'key_b'];
    const decisions: RateDecision[] = [];
    for (let i = 0; i < 20; i++)
      decisions.push(await limiter.consume(accountOfKey[keys[i % 2] as string] as string, freeRules(), T0 + i * 100));
    expect(allowedCount(decisions)).toBe(20);

    const refused = await limiter.consume(accountOfKey.key_b as string, freeRules(), T0 + 2_500);
    expect(refused).toEqual({
      allowed: false,
      rule: freeRules()[0],
      limit: 20,
      remaining: 0,
      resetAt: T0 + MINUTE,
      retryAfterMs: MINUTE - 2_500,
    });

    const other = await limiter.consume(newAccount(), freeRules(), T0 + 2_500);
    expect(other).toMatchObject({ allowed: true, remaining: 19 });
  });

  it('reports limit, remaining and resetAt exactly, for the tightest rule', async () => {
    const account = newAccount();
    expect(await limiter.consume(account, freeRules(), T0)).toEqual({
      allowed: true,
      rule: freeRules()[0],
      limit: 20,
      remaining: 19,
      resetAt: T0 + MINUTE,
      retryAfterMs: 0,
    });
    await consumeMany(limiter, account, 4, (i) => T0 + (i + 1) * 1_000);
    expect(await limiter.peek(account, freeRules(), T0 + 5_000)).toEqual([
      { rule: freeRules()[0], limit: 20, used: 5, remaining: 15, resetAt: T0 + MINUTE },
      { rule: freeRules()[1], limit: 50, used: 5, remaining: 45, resetAt: NEXT_MIDNIGHT },
    ]);
    // Near the daily cap the day becomes the tightest rule.
    const nearCap = await limiter.consume(account, freeRules(6), T0 + 6_000);
    expect(nearCap).toEqual({
      allowed: true,
      rule: freeRules(6)[1],
      limit: 6,
      remaining: 0,
      resetAt: NEXT_MIDNIGHT,
      retryAfterMs: 0,
    });
  });

  it('peek consumes nothing and reports an untouched account as empty', async () => {
    const account = newAccount();
    for (let i = 0; i < 5; i++) await limiter.peek(account, freeRules(), T0);
    expect(await limiter.peek(account, freeRules(), T0)).toEqual([
      { rule: freeRules()[0], limit: 20, used: 0, remaining: 20, resetAt: T0 },
      { rule: freeRules()[1], limit: 50, used: 0, remaining: 50, resetAt: NEXT_MIDNIGHT },
    ]);
  });

  it('frees slots one by one, 60 s after each request (rolling window)', async () => {
    const account = newAccount();
    expect(allowedCount(await consumeMany(limiter, account, 20, (i) => T0 + i * 1_000))).toBe(20);

    expect(await limiter.consume(account, freeRules(), T0 + 59_999)).toMatchObject({
      allowed: false,
      resetAt: T0 + MINUTE,
      retryAfterMs: 1,
    });
    for (let slot = 0; slot < 3; slot++) {
      const at = T0 + MINUTE + slot * 1_000;
      // The request made at T0 + slot s has left the window: exactly one slot is free.
      expect(await limiter.consume(account, freeRules(), at)).toMatchObject({
        allowed: true,
        remaining: 0,
        resetAt: T0 + MINUTE + (slot + 1) * 1_000,
      });
      expect(await limiter.consume(account, freeRules(), at)).toMatchObject({
        allowed: false,
        resetAt: T0 + MINUTE + (slot + 1) * 1_000,
        retryAfterMs: 1_000,
      });
    }
  });

  it('has no burst at a window edge: 20 at t=59.9 s then 20 at t=60.1 s admit only the first 20', async () => {
    const account = newAccount();
    const early = await Promise.all(
      Array.from({ length: 20 }, () => limiter.consume(account, freeRules(), T0 + 59_900)),
    );
    const late = await Promise.all(
      Array.from({ length: 20 }, () => limiter.consume(account, freeRules(), T0 + 60_100)),
    );
    expect(allowedCount(early)).toBe(20);
    expect(allowedCount(late)).toBe(0);
    expect(late[0]).toMatchObject({ rule: freeRules()[0], resetAt: T0 + 119_900, retryAfterMs: 59_800 });

    expect((await limiter.consume(account, freeRules(), T0 + 119_899)).allowed).toBe(false);
    expect(allowedCount(await consumeMany(limiter, account, 21, () => T0 + 119_900))).toBe(20);
  });

  it('caps the UTC day at 50 with resetAt = next UTC midnight, and starts a new day at midnight', async () => {
    const account = newAccount();
    // 3 s apart keeps every request inside the per-minute limit.
    expect(allowedCount(await consumeMany(limiter, account, 50, (i) => T0 + i * 3_000))).toBe(50);

    const now = T0 + 50 * 3_000;
    expect(await limiter.consume(account, freeRules(), now)).toEqual({
      allowed: false,
      rule: freeRules()[1],
      limit: 50,
      remaining: 0,
      resetAt: NEXT_MIDNIGHT,
      retryAfterMs: NEXT_MIDNIGHT - now,
    });
    expect((await limiter.consume(account, freeRules(), NEXT_MIDNIGHT - 1)).allowed).toBe(false);

    expect(await limiter.consume(account, freeRules(), NEXT_MIDNIGHT)).toMatchObject({
      allowed: true,
      rule: freeRules()[0],
      remaining: 19,
    });
    const [, day] = await limiter.peek(account, freeRules(), NEXT_MIDNIGHT);
    expect(day).toEqual({
      rule: freeRules()[1],
      limit: 50,
      used: 1,
      remaining: 49,
      resetAt: NEXT_MIDNIGHT + 86_400_000,
    });
  });

  it('admits more at once when the daily limit rises from 50 to 1000 (credits purchased)', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 50, (i) => T0 + i * 3_000);
    const now = T0 + 50 * 3_000;
    expect((await limiter.consume(account, freeRules(50), now)).allowed).toBe(false);

    expect(await limiter.consume(account, freeRules(1000), now)).toMatchObject({ allowed: true });
    const [, day] = await limiter.peek(account, freeRules(1000), now);
    expect(day).toMatchObject({ limit: 1000, used: 51, remaining: 949 });
  });

  it('keeps the per-minute window across midnight while the day counter starts over', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 20, () => NEXT_MIDNIGHT - 30_000);
    const now = NEXT_MIDNIGHT + 10_000;
    expect(await limiter.consume(account, freeRules(), now)).toMatchObject({
      allowed: false,
      rule: freeRules()[0],
      resetAt: NEXT_MIDNIGHT + 30_000,
    });
    const [, day] = await limiter.peek(account, freeRules(), now);
    expect(day).toMatchObject({ used: 0, remaining: 50 });
  });

  it('a request refused by the minute limit does not count toward the day', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 20, () => T0);
    const refused = await consumeMany(limiter, account, 10, () => T0 + 1_000);
    expect(allowedCount(refused)).toBe(0);
    const [minute, day] = await limiter.peek(account, freeRules(), T0 + 1_000);
    expect(minute).toMatchObject({ used: 20 });
    expect(day).toMatchObject({ used: 20, remaining: 30 });
  });

  it('a request refused by the daily cap does not take a per-minute slot', async () => {
    const account = newAccount();
    expect(allowedCount(await consumeMany(limiter, account, 5, () => T0, freeRules(5)))).toBe(5);
    const refused = await consumeMany(limiter, account, 10, (i) => T0 + 1 + i, freeRules(5));
    expect(refused.every((d) => !d.allowed && d.rule.name === 'per_day')).toBe(true);

    // With the day lifted, exactly the 15 per-minute slots the refusals did not touch are left.
    const after = await consumeMany(limiter, account, 16, () => T0 + 20, freeRules(1000));
    expect(allowedCount(after)).toBe(15);
    expect(after[15]).toMatchObject({ allowed: false, rule: freeRules()[0] });
  });

  it('when several rules refuse, reports the one that frees latest', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 20, () => T0, freeRules(20));
    expect(await limiter.consume(account, freeRules(20), T0 + 1)).toMatchObject({
      allowed: false,
      rule: freeRules(20)[1],
      resetAt: NEXT_MIDNIGHT,
    });
  });

  it('a limit lowered below current usage frees a slot only once enough requests left the window', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 20, (i) => T0 + i * 1_000);
    const ten: RateRule[] = [{ name: 'per_minute', kind: 'sliding', limit: 10, windowMs: MINUTE }];
    // 20 in the window, limit 10: the 11 oldest (T0 .. T0+10 s) must leave first.
    expect(await limiter.consume(account, ten, T0 + 20_000)).toMatchObject({ allowed: false, resetAt: T0 + 70_000 });
    expect((await limiter.consume(account, ten, T0 + 69_999)).allowed).toBe(false);
    expect((await limiter.consume(account, ten, T0 + 70_000)).allowed).toBe(true);
  });

  it('allows exactly 20 of 100 concurrent calls', async () => {
    const account = newAccount();
    const decisions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => limiter.consume(account, freeRules(), T0 + (i % 10))),
    );
    expect(allowedCount(decisions)).toBe(20);
    const [minute, day] = await limiter.peek(account, freeRules(), T0 + 10);
    expect(minute).toMatchObject({ used: 20 });
    expect(day).toMatchObject({ used: 20 });
  });

  it('refund gives back the unit of one allowed call, and never goes below zero', async () => {
    const account = newAccount();
    await consumeMany(limiter, account, 20, (i) => T0 + i);
    await limiter.refund(account, freeRules(), T0 + 7);
    expect(await limiter.peek(account, freeRules(), T0 + 100)).toMatchObject([{ used: 19 }, { used: 19 }]);
    expect((await limiter.consume(account, freeRules(), T0 + 100)).allowed).toBe(true);
    expect((await limiter.consume(account, freeRules(), T0 + 100)).allowed).toBe(false);

    // A timestamp that consumed nothing removes no sliding entry; nothing goes negative.
    const fresh = newAccount();
    await limiter.refund(fresh, freeRules(), T0);
    expect(await limiter.peek(fresh, freeRules(), T0)).toMatchObject([{ used: 0 }, { used: 0 }]);
  });

  describe('weighted sliding rule (tokens per minute)', () => {
    const TPM: WeightedRule = { name: 'tpm', kind: 'sliding', limit: 1_000, windowMs: MINUTE };

    it('admits while the window total is under the limit; one call may pass it by its own weight, never two', async () => {
      const subject = newAccount();
      expect(await limiter.consumeWeighted(subject, TPM, 600, T0)).toMatchObject({
        allowed: true,
        limit: 1_000,
        remaining: 400,
        resetAt: T0 + MINUTE,
        retryAfterMs: 0,
      });
      expect(await limiter.consumeWeighted(subject, TPM, 300, T0 + 1_000)).toMatchObject({
        allowed: true,
        remaining: 100,
      });
      expect(await limiter.consumeWeighted(subject, TPM, 500, T0 + 2_000)).toMatchObject({
        allowed: true,
        remaining: 0,
      }); // 900 < 1000: room
      // 1400 in the window: refused until enough weight leaves — the 600 at T0 leaves at T0 + 60 s, 1400 − 600 = 800 < 1000.
      const refused = await limiter.consumeWeighted(subject, TPM, 1, T0 + 3_000);
      expect(refused).toMatchObject({
        allowed: false,
        remaining: 0,
        resetAt: T0 + MINUTE,
        retryAfterMs: MINUTE - 3_000,
        entry: null,
      });
      expect((await limiter.consumeWeighted(subject, TPM, 1, T0 + MINUTE)).allowed).toBe(true);
    });

    it('the pivot is the entry whose expiry brings the total under the limit', async () => {
      const subject = newAccount();
      for (let i = 0; i < 5; i++) await limiter.consumeWeighted(subject, TPM, 300, T0 + i * 1_000); // 300 .. 1500 (the 5th is refused)
      // Window: 300@0, 300@1, 300@2, 300@3 = 1200; under 1000 once 201 has left: the entry at T0 (300).
      expect(await limiter.consumeWeighted(subject, TPM, 10, T0 + 10_000)).toMatchObject({
        allowed: false,
        resetAt: T0 + MINUTE,
      });
      expect(await limiter.consumeWeighted(subject, TPM, 10, T0 + MINUTE)).toMatchObject({
        allowed: true,
        remaining: 1_000 - 910,
        resetAt: T0 + MINUTE + 1_000,
      });
    });

    it('adjust replaces an entry’s weight with the real usage; 0 removes it; a gone entry is a no-op', async () => {
      const subject = newAccount();
      const first = await limiter.consumeWeighted(subject, TPM, 900, T0);
      await limiter.adjustWeighted(subject, TPM, first.entry!, 100); // estimated 900, used 100
      expect(await limiter.consumeWeighted(subject, TPM, 0, T0 + 1)).toMatchObject({ allowed: true, remaining: 900 });
      const second = await limiter.consumeWeighted(subject, TPM, 2_000, T0 + 2);
      expect(second.allowed).toBe(true);
      expect((await limiter.consumeWeighted(subject, TPM, 1, T0 + 3)).allowed).toBe(false);
      await limiter.adjustWeighted(subject, TPM, second.entry!, 0); // never sent
      expect(await limiter.consumeWeighted(subject, TPM, 1, T0 + 4)).toMatchObject({ allowed: true, remaining: 899 });
      await limiter.adjustWeighted(subject, TPM, 'no-such-entry', 5);
      await limiter.adjustWeighted(newAccount(), TPM, 'no-such-entry', 5);
    });

    it('exactly the calls that fit are admitted out of 50 concurrent ones of 100 each', async () => {
      const subject = newAccount();
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => limiter.consumeWeighted(subject, TPM, 100, T0)),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    });
  });
});

describe('RedisRateLimiter across processes', () => {
  let space: LimiterSpace;
  const prefix = uniqueTestPrefix();

  beforeAll(async () => {
    space = await redisTarget.createSpace();
  });

  afterAll(async () => {
    await space?.cleanup();
    await deleteKeys(REDIS_TEST_URL, prefix);
  });

  it('three instances on separate connections share one limit: exactly 20 of 60 concurrent calls pass', async () => {
    const processes = await Promise.all([space.open(), space.open(), space.open()]);
    const account = newAccount();
    const calls = processes.flatMap((limiter) =>
      Array.from({ length: 20 }, () => limiter.consume(account, freeRules(), T0)),
    );
    expect(allowedCount(await Promise.all(calls))).toBe(20);
    for (const limiter of processes)
      expect(await limiter.peek(account, freeRules(), T0)).toMatchObject([{ used: 20 }, { used: 20 }]);
  });

  it('keeps every counter under its prefix with a TTL, and deletes nothing of others', async () => {
    const limiter = new RedisRateLimiter({ url: REDIS_TEST_URL, keyPrefix: prefix, skewAllowanceMs: 10_000 });
    const admin = new Redis(REDIS_TEST_URL);
    try {
      await limiter.ready();
      await limiter.consume('acct_ttl', freeRules(), T0);
      const keys = (await admin.keys(`${prefix}*`)).sort();
      expect(keys).toEqual([`${prefix}{acct_ttl}:per_day:2026-11-18`, `${prefix}{acct_ttl}:per_minute`]);
      const [dayTtl, minuteTtl] = await Promise.all(keys.map((key) => admin.pttl(key)));
      expect(minuteTtl).toBeGreaterThan(MINUTE);
      expect(minuteTtl).toBeLessThanOrEqual(MINUTE + 10_000);
      expect(dayTtl).toBeGreaterThan(NEXT_MIDNIGHT - T0);
      expect(dayTtl).toBeLessThanOrEqual(NEXT_MIDNIGHT - T0 + 10_000);
    } finally {
      await limiter.close();
      admin.disconnect();
    }
  });
  it('after Redis comes back without its data, restore() puts back this process’s counts and its capacity (weighted) entries', async () => {
    const limiter = new RedisRateLimiter({ url: REDIS_TEST_URL, keyPrefix: prefix, skewAllowanceMs: 10_000 });
    const admin = new Redis(REDIS_TEST_URL);
    const TPM: WeightedRule = { name: 'tpm', kind: 'sliding', limit: 1_000, windowMs: MINUTE };
    try {
      await limiter.ready();
      const account = 'acct_restore';
      expect(allowedCount(await consumeMany(limiter, account, 5, (i) => T0 + i))).toBe(5);
      const first = await limiter.consumeWeighted('endpoint_restore', TPM, 600, T0);
      expect(await limiter.consumeWeighted('endpoint_restore', TPM, 300, T0 + 1)).toMatchObject({ allowed: true });
      await limiter.adjustWeighted('endpoint_restore', TPM, first.entry!, 500); // the real usage replaced the estimate

      // Redis restarts empty.
      await admin.del(...(await admin.keys(`${prefix}*`)));
      expect(await limiter.peek(account, freeRules(), T0 + 10)).toMatchObject([{ used: 0 }, { used: 0 }]);

      expect(await limiter.restore(T0 + 10)).toEqual(new Set());
      expect(await limiter.peek(account, freeRules(), T0 + 10)).toMatchObject([{ used: 5 }, { used: 5 }]);
      // 500 + 300 restored: 150 more leaves 50.
      expect(await limiter.consumeWeighted('endpoint_restore', TPM, 150, T0 + 10)).toMatchObject({
        allowed: true,
        remaining: 50,
      });
      // A weighted log restored again (a retry) counts each entry once.
      const log = `${prefix}{endpoint_restore}:tpm:log`;
      expect(await limiter.restore(T0 + 10, new Set([log]))).toEqual(new Set());
      expect(await limiter.consumeWeighted('endpoint_restore', TPM, 10, T0 + 11)).toMatchObject({
        allowed: true,
        remaining: 40,
      });
      // Entries that left the window are not put back.
      await admin.del(...(await admin.keys(`${prefix}*`)));
      await limiter.restore(T0 + MINUTE + 5);
      expect(await limiter.consumeWeighted('endpoint_restore', TPM, 100, T0 + MINUTE + 5)).toMatchObject({
        remaining: 1_000 - 160 - 100,
      });
    } finally {
      await limiter.close();
      admin.disconnect();
    }
  });
});

describe('RedisRateLimiter when Redis is unreachable', () => {
  async function expectUnavailableFast(work: () => Promise<unknown>): Promise<void> {
    const started = performance.now();
    const error: unknown = await work().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(TollgateError);
    expect((error as TollgateError).code).toBe('store.unavailable');
  }

  async function listen(server: Server): Promise<number> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return address.port;
  }

  it('fails fast with store.unavailable on a closed port', async () => {
    const server = createServer();
    const port = await listen(server);
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const limiter = new RedisRateLimiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 300 });
    try {
      await expectUnavailableFast(() => limiter.consume('acct', freeRules(), T0));
      await expectUnavailableFast(() => limiter.ready());
      await expectUnavailableFast(() => limiter.peek('acct', freeRules(), T0));
    } finally {
      await limiter.close();
    }
  });

  it('fails fast with store.unavailable when the server accepts but never answers', async () => {
    const sockets: Array<{ destroy(): void }> = [];
    const server = createServer((socket) => sockets.push(socket));
    const port = await listen(server);
    const limiter = new RedisRateLimiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 300 });
    try {
      await expectUnavailableFast(() => limiter.ready());
      await expectUnavailableFast(() => limiter.consume('acct', freeRules(), T0));
    } finally {
      await limiter.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
