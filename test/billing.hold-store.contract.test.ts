/**
 * One behaviour spec for every HoldStore (in-process and Redis). Time is injected: a hold expires by
 * moving `now`, never by sleeping. Amounts are whole µUSD (multiples of 1000 units) so both stores
 * compute the same figures exactly; Redis's rounding of finer amounts is tested on its own below.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import type { HoldCheck, HoldStore } from '../src/billing/hold-store.js';
import { Redis } from 'ioredis';
import { RedisHoldStore } from '../src/billing/redis-hold-store.js';
import { REDIS_TEST_URL, deleteKeys } from './helpers/limiter-targets.js';
import { HOLD_TARGETS, redisHoldTarget, type HoldSpace } from './helpers/hold-targets.js';

const T0 = Date.UTC(2026, 10, 18, 12);
const TTL = 60_000;
/** 0.001 USD in units (1e-9 USD). */
const X = 1_000_000n;

let accounts = 0;
const newAccount = (): string => `acct_${++accounts}_${Date.now().toString(36)}`;
let holdIds = 0;

/** A paid check of `amount` against a fresh snapshot (marks read just now). */
async function paid(
  store: HoldStore,
  accountId: string,
  amount: bigint,
  balance: bigint,
  extra: Partial<HoldCheck> = {},
): Promise<HoldCheck> {
  const keyHash = extra.keyHash ?? 'key_a';
  const marks = await store.marks(accountId, keyHash);
  return {
    id: `h${++holdIds}`,
    accountId,
    keyHash,
    amount,
    paid: true,
    balance,
    accountMark: marks.account,
    keyRemaining: null,
    keyMark: marks.key,
    expiresAt: T0 + TTL,
    ...extra,
  };
}

describe.each(HOLD_TARGETS)('HoldStore contract: $name', (target) => {
  let space: HoldSpace;
  let store: HoldStore;

  beforeAll(async () => {
    space = await target.createSpace();
    store = await space.open();
  });
  afterAll(async () => {
    await space?.cleanup();
  });

  it('admits a paid request while balance − live holds > 0, and reports what refused it', async () => {
    const account = newAccount();
    const admitted: boolean[] = [];
    for (let i = 0; i < 5; i++)
      admitted.push((await store.admit(await paid(store, account, 3n * X, 10n * X), T0)).admitted);
    // Held 0, 3X, 6X, 9X before each of the first four: available 10X, 7X, 4X, 1X (> 0); then −2X.
    expect(admitted).toEqual([true, true, true, true, false]);
    const refused = await store.admit(await paid(store, account, X, 10n * X), T0);
    expect(refused).toEqual({ admitted: false, reason: 'balance', balance: 10n * X, held: 12n * X });
    expect(await store.held(account, T0)).toBe(12n * X);
  });

  it('a free request holds nothing and needs only a non-negative balance', async () => {
    const account = newAccount();
    expect((await store.admit(await paid(store, account, 5n * X, 5n * X), T0)).admitted).toBe(true);
    // Paid: 5X − 5X held = 0 → refused. Free: balance 5X ≥ 0 → admitted, and nothing more is held.
    expect((await store.admit(await paid(store, account, X, 5n * X), T0)).admitted).toBe(false);
    const free = await store.admit({ ...(await paid(store, account, 0n, 5n * X)), paid: false }, T0);
    expect(free.admitted).toBe(true);
    expect(await store.held(account, T0)).toBe(5n * X);
    const negative = await store.admit({ ...(await paid(store, account, 0n, -X)), paid: false }, T0);
    expect(negative).toMatchObject({ admitted: false, reason: 'balance', balance: -X });
    const zero = await store.admit({ ...(await paid(store, newAccount(), 0n, 0n)), paid: false }, T0);
    expect(zero.admitted).toBe(true);
  });

  it('a key limit counts the key’s own holds; another key of the account only shares the balance', async () => {
    const account = newAccount();
    const onA = async () =>
      store.admit(await paid(store, account, 2n * X, 100n * X, { keyHash: 'key_a', keyRemaining: 3n * X }), T0);
    expect((await onA()).admitted).toBe(true); // remaining 3X − 0 held
    expect((await onA()).admitted).toBe(true); // 3X − 2X = X > 0
    expect(await onA()).toEqual({ admitted: false, reason: 'key_limit', balance: 100n * X, held: 4n * X });
    const onB = await store.admit(
      await paid(store, account, 2n * X, 100n * X, { keyHash: 'key_b', keyRemaining: 3n * X }),
      T0,
    );
    expect(onB.admitted).toBe(true);
    // Free requests are refused too once the key's limit is used up by holds.
    const freeOnA = await store.admit(
      { ...(await paid(store, account, 0n, 100n * X, { keyHash: 'key_a', keyRemaining: 3n * X })), paid: false },
      T0,
    );
    expect(freeOnA).toMatchObject({ admitted: false, reason: 'key_limit' });
    expect(await store.held(account, T0)).toBe(6n * X);
  });

  it('release frees the hold once; unknown or repeated releases change nothing', async () => {
    const account = newAccount();
    const check = await paid(store, account, 4n * X, 4n * X);
    expect((await store.admit(check, T0)).admitted).toBe(true);
    expect((await store.admit(await paid(store, account, X, 4n * X), T0)).admitted).toBe(false);
    await store.release(check);
    await store.release(check);
    await store.release({ ...check, id: 'never-held' });
    expect(await store.held(account, T0)).toBe(0n);
    expect((await store.admit(await paid(store, account, X, 4n * X), T0)).admitted).toBe(true);
  });

  it('settle replaces the hold by the charge: an admission on an older snapshot still counts it, a newer snapshot does not', async () => {
    const account = newAccount();
    const balance = 10n * X;
    const before = await store.marks(account, 'key_a'); // marks of the snapshot read before the charge
    const check = await paid(store, account, 4n * X, balance, { keyRemaining: 20n * X });
    expect((await store.admit(check, T0)).admitted).toBe(true);
    await store.settle(check, { account: 3n * X, key: 3n * X });
    expect(await store.held(account, T0)).toBe(0n);

    // Old snapshot (balance 10X, mark before the charge): effective balance 7X.
    const stale = {
      ...(await paid(store, account, 7n * X, balance)),
      accountMark: before.account,
      keyMark: before.key,
    };
    expect((await store.admit(stale, T0)).admitted).toBe(true);
    expect(await store.admit({ ...stale, id: 'stale-2', amount: X }, T0)).toEqual({
      admitted: false,
      reason: 'balance',
      balance: 7n * X,
      held: 7n * X,
    });
    await store.release(stale);

    // Fresh snapshot (balance already 7X, mark after the charge): the charge is not counted twice.
    const fresh = await paid(store, account, X, 7n * X);
    expect(await store.admit({ ...fresh, amount: 0n }, T0)).toEqual({ admitted: true });
    // The key's counter moved too: remaining 20X on an old key snapshot, minus the 3X charged.
    const keyStale = {
      ...(await paid(store, account, 17n * X, 100n * X, { keyRemaining: 20n * X })),
      keyMark: before.key,
    };
    expect((await store.admit(keyStale, T0)).admitted).toBe(true);
    expect(await store.admit({ ...keyStale, id: 'key-stale-2', amount: X }, T0)).toMatchObject({
      admitted: false,
      reason: 'key_limit',
      held: 17n * X,
    });
  });

  it('a key-only charge (BYOK usage counted in the limit, no credits charged) is kept too', async () => {
    const account = newAccount();
    const before = await store.marks(account, 'key_a');
    const check = await paid(store, account, X, 10n * X, { keyRemaining: 4n * X });
    await store.admit(check, T0);
    await store.settle(check, { account: 0n, key: 3n * X });
    const onOldKeySnapshot = {
      ...(await paid(store, account, X, 10n * X, { keyRemaining: 4n * X })),
      keyMark: before.key,
    };
    expect((await store.admit(onOldKeySnapshot, T0)).admitted).toBe(true); // 4X − 3X = X
    expect(await store.admit({ ...onOldKeySnapshot, id: 'key-only-2' }, T0)).toMatchObject({
      admitted: false,
      reason: 'key_limit',
    });
  });

  it('a charge whose hold already expired or was released is still counted', async () => {
    const account = newAccount();
    const before = await store.marks(account, null);
    const check = await paid(store, account, 2n * X, 10n * X, { expiresAt: T0 + 10 });
    expect((await store.admit(check, T0)).admitted).toBe(true);
    expect(await store.held(account, T0 + 10)).toBe(0n);
    await store.settle(check, { account: 2n * X, key: 2n * X });
    const refused = await store.admit(
      { ...(await paid(store, account, X, 2n * X)), accountMark: before.account },
      T0 + 20,
    );
    expect(refused).toMatchObject({ admitted: false, reason: 'balance', balance: 0n });
  });

  it('holds expire at expiresAt unless renewed, and renewing never revives an expired hold', async () => {
    const account = newAccount();
    const a = await paid(store, account, 2n * X, 10n * X, { expiresAt: T0 + 1_000 });
    const b = await paid(store, account, 3n * X, 10n * X, { expiresAt: T0 + 1_000 });
    expect((await store.admit(a, T0)).admitted).toBe(true);
    expect((await store.admit(b, T0)).admitted).toBe(true);
    expect(await store.held(account, T0 + 999)).toBe(5n * X);
    await store.renew([a], T0 + 5_000, T0 + 500);
    expect(await store.held(account, T0 + 1_000)).toBe(2n * X); // b lapsed, a was renewed
    await store.renew([b], T0 + 9_000, T0 + 1_500); // too late for b
    expect(await store.held(account, T0 + 1_500)).toBe(2n * X);
    // A pruned hold no longer counts against admission either.
    const big = await paid(store, account, X, 10n * X);
    expect(await store.admit({ ...big, amount: 8n * X }, T0 + 1_500)).toEqual({ admitted: true });
    expect(await store.held(account, T0 + 5_000)).toBe(8n * X);
  });

  it('restore re-registers lost or lapsed holds once, keeps present ones, and never lowers an expiry', async () => {
    const account = newAccount();
    const kept = await paid(store, account, 2n * X, 10n * X, { expiresAt: T0 + 5_000 });
    const lapsed = await paid(store, account, 3n * X, 10n * X, { expiresAt: T0 + 1_000, keyHash: 'key_b' });
    expect((await store.admit(kept, T0)).admitted).toBe(true);
    expect((await store.admit(lapsed, T0)).admitted).toBe(true);
    const lost = { id: `h${++holdIds}`, accountId: account, keyHash: 'key_b', amount: 4n * X }; // never seen by this store
    const owned = [kept, lapsed, lost].map(({ id, accountId, keyHash, amount }) => ({
      id,
      accountId,
      keyHash,
      amount,
    }));
    await store.restore(owned, T0 + 3_000, T0 + 2_000);
    await store.restore(owned, T0 + 3_000, T0 + 2_000); // idempotent
    expect(await store.held(account, T0 + 2_999)).toBe(9n * X);
    expect(await store.held(account, T0 + 3_000)).toBe(2n * X); // `kept` keeps its later expiry
    expect(await store.held(account, T0 + 5_000)).toBe(0n);
    // The restored holds count for the key too: 8X limit − 7X held on key_b leaves X.
    const keyCheck = await paid(store, account, X, 100n * X, { keyHash: 'key_b', keyRemaining: 8n * X });
    await store.restore(owned.slice(1), T0 + 9_000, T0 + 5_000);
    expect((await store.admit({ ...keyCheck, id: `h${++holdIds}` }, T0 + 5_000)).admitted).toBe(true);
    expect(await store.admit({ ...keyCheck, id: `h${++holdIds}` }, T0 + 5_000)).toMatchObject({
      admitted: false,
      reason: 'key_limit',
    });
  });

  it('settling after expiry leaves the totals consistent (no negative holds)', async () => {
    const account = newAccount();
    const check = await paid(store, account, 2n * X, 10n * X, { expiresAt: T0 + 100 });
    await store.admit(check, T0);
    expect(await store.held(account, T0 + 200)).toBe(0n); // pruned
    await store.settle(check, { account: X, key: X });
    await store.release(check);
    expect(await store.held(account, T0 + 200)).toBe(0n);
  });

  it('concurrent admissions from several handles never oversubscribe: 200 requests, balance for 10', async () => {
    const account = newAccount();
    const handles = [store, await space.open(), await space.open()];
    const decisions = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const handle = handles[i % handles.length]!;
        return handle.admit(await paid(handle, account, X, 10n * X), T0);
      }),
    );
    expect(decisions.filter((d) => d.admitted)).toHaveLength(10);
    expect(await store.held(account, T0)).toBe(10n * X);
  });

  it('is exact for balances up to billions of USD', async () => {
    const account = newAccount();
    const balance = 9_000_000_000n * 1_000_000_000n; // 9e9 USD in units: 9e15 µUSD, just under 2^53
    const first = await paid(store, account, balance - 1000n, balance);
    expect((await store.admit(first, T0)).admitted).toBe(true); // leaves exactly 1 µUSD
    expect((await store.admit(await paid(store, account, X, balance), T0)).admitted).toBe(true);
    expect(await store.admit(await paid(store, account, X, balance), T0)).toMatchObject({
      admitted: false,
      held: balance - 1000n + X,
    });
  });
});

describe('RedisHoldStore specifics', () => {
  let space: HoldSpace;
  let store: RedisHoldStore;
  beforeAll(async () => {
    space = await redisHoldTarget.createSpace();
    store = (await space.open()) as RedisHoldStore;
  });
  afterAll(() => space.cleanup());

  it('rounds against the caller in µUSD: holds and charges up, balances down', async () => {
    const account = newAccount();
    // Balance 2500 units → 2 µUSD; a hold of 1 unit → 1 µUSD. Two fit, the third does not (exact math would admit it).
    const admits: boolean[] = [];
    for (let i = 0; i < 3; i++) admits.push((await store.admit(await paid(store, account, 1n, 2_500n), T0)).admitted);
    expect(admits).toEqual([true, true, false]);
    expect(await store.held(account, T0)).toBe(2000n);
  });

  it("a charge counter below the caller's mark (Redis lost its data on a live connection) decides nothing", async () => {
    const account = newAccount();
    const first = await paid(store, account, X, 10n * X);
    expect((await store.admit(first, T0)).admitted).toBe(true);
    await store.settle(first, { account: X, key: X });
    const check = await paid(store, account, X, 9n * X, { keyRemaining: 5n * X }); // marks: X charged
    const raw = new Redis(REDIS_TEST_URL);
    try {
      await raw.del(...store.keys(account)); // what FLUSHALL or an eviction leaves of the account
    } finally {
      raw.disconnect();
    }
    // Admitted from the empty Redis, the charge since the mark and every live hold would be forgotten.
    await expect(store.admit(check, T0)).rejects.toMatchObject({
      code: 'store.unavailable',
      metadata: { reason: 'redis_resyncing' },
    });
    expect(await store.held(account, T0)).toBe(0n);
    // A snapshot read after the loss (marks of the emptied Redis) is decided as usual.
    expect((await store.admit(await paid(store, account, X, 9n * X), T0)).admitted).toBe(true);
  });

  it('a newer fleet epoch marked on the account (another process saw Redis come back empty) decides nothing for a process still behind', async () => {
    const keyPrefix = `tollgate:test:hold-epoch:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`;
    const at = (epoch: string) =>
      new RedisHoldStore({ url: REDIS_TEST_URL, keyPrefix, timeoutMs: 2_000, epoch: () => epoch });
    const [behind, current, later] = [at('1000'), at('2000'), at('3000')];
    try {
      await Promise.all([behind, current, later].map((store) => store.ready()));
      const account = newAccount();
      expect((await current.admit(await paid(current, account, X, 10n * X), T0)).admitted).toBe(true);
      await expect(behind.admit(await paid(behind, account, X, 10n * X), T0)).rejects.toMatchObject({
        metadata: { reason: 'redis_resyncing' },
      });
      // A process ahead (it saw a newer epoch) decides, and marks its own.
      expect((await later.admit(await paid(later, account, X, 10n * X), T0)).admitted).toBe(true);
      await expect(current.admit(await paid(current, account, X, 10n * X), T0)).rejects.toMatchObject({
        metadata: { reason: 'redis_resyncing' },
      });
      expect(await later.held(account, T0)).toBe(2n * X);
    } finally {
      await deleteKeys(REDIS_TEST_URL, keyPrefix);
      await Promise.all([behind, current, later].map((store) => store.close()));
    }
  });

  it("the fleet's epoch key gone or changed (Redis emptied on a live connection) decides nothing, even for an account with nothing else to show it", async () => {
    const keyPrefix = `tollgate:test:hold-epoch-key:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`;
    const epochKey = `${keyPrefix}{fleet}:epoch`;
    const raw = new Redis(REDIS_TEST_URL);
    let seen = '2000';
    const holds = new RedisHoldStore({ url: REDIS_TEST_URL, keyPrefix, timeoutMs: 2_000, epoch: () => seen, epochKey });
    try {
      await holds.ready();
      await raw.set(epochKey, '2000');
      const account = newAccount();
      expect((await holds.admit(await paid(holds, account, X, 10n * X), T0)).admitted).toBe(true);
      // Another process's snapshot: no charge on the account, no hold of this process's own there.
      const fresh = newAccount();
      const check = await paid(holds, fresh, X, 10n * X);
      await raw.del(epochKey); // FLUSHALL took it (and everything else)
      await expect(holds.admit(check, T0)).rejects.toMatchObject({ metadata: { reason: 'redis_resyncing' } });
      await raw.set(epochKey, '3000'); // the first heartbeat after wrote a new one
      await expect(holds.admit(check, T0)).rejects.toMatchObject({ metadata: { reason: 'redis_resyncing' } });
      expect(await holds.held(fresh, T0)).toBe(0n);
      seen = '3000'; // this process's heartbeat saw it too
      expect((await holds.admit(check, T0)).admitted).toBe(true);
    } finally {
      raw.disconnect();
      await deleteKeys(REDIS_TEST_URL, keyPrefix);
      await holds.close();
    }
  });

  it('refuses amounts beyond its exact range instead of rounding them', async () => {
    const check = await paid(store, newAccount(), X, 10n ** 19n);
    await expect(store.admit(check, T0)).rejects.toThrow(/exact range/);
  });

  it('an unreachable Redis fails fast with store.unavailable', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const dead = new RedisHoldStore({ url: `redis://127.0.0.1:${port}`, timeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await dead.admit(await paid(store, newAccount(), X, X), T0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TollgateError);
      expect((error as TollgateError).code).toBe('store.unavailable');
      await expect(dead.marks('a', null)).rejects.toMatchObject({ code: 'store.unavailable' });
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      await dead.close();
    }
  });
});
