/**
 * The settler's group commit when one charge of a batch is bad: after the batch's retries, its
 * charges are settled one by one, so only the bad one fails (review finding: a NUL byte in one
 * upstream finish_reason made PostgreSQL refuse the batch, and every caller of it went unbilled).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Settler } from '../src/billing/settler.js';
import { TollgateError } from '../src/core/errors.js';
import type { Settlement, SettleOutcome, Store } from '../src/store/types.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';
import { generationFixture, keyFixture, newAccountFixture, settlementFixture } from './helpers/store-fixtures.js';

const WEDNESDAY = Date.UTC(2026, 10, 18, 12);

/** The real store, except that a batch holding `poisoned` throws (as the database would). */
function poisonedStore(store: Store, poisoned: string, calls: Settlement[][]): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'settle') {
        return async (batch: readonly Settlement[]) => {
          calls.push([...batch]);
          if (batch.some((s) => s.generation.id === poisoned))
            throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
          return target.settle(batch);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Settles every settlement at once (one batch) and reports each caller's outcome. */
function settleAll(settler: Settler, settlements: readonly Settlement[]) {
  return Promise.all(
    settlements.map((s) =>
      settler.settle(s).then(
        (outcome: SettleOutcome) => ({ ok: true as const, outcome }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    ),
  );
}

describe.each(STORE_TARGETS)('Settler with one bad charge in a batch ($name)', (target) => {
  let database: StoreDatabase;
  let store: Store;
  let accountId: string;
  let keyHash: string;

  beforeAll(async () => {
    database = await target.createDatabase();
    store = database.openStore();
    await store.migrate();
    accountId = (await store.createAccount(newAccountFixture())).id;
    const key = keyFixture(accountId);
    await store.insertKey(key);
    keyHash = key.hash;
  });

  afterAll(async () => {
    await database.cleanup();
  });

  it('fails only the bad charge; its neighbours are committed and counted once', async () => {
    const settlements = Array.from({ length: 10 }, (_, i) =>
      settlementFixture(generationFixture(accountId, keyHash, { createdAt: WEDNESDAY, totalCost: BigInt(1000 + i) })),
    );
    const poisoned = settlements[4]!.generation.id;
    const calls: Settlement[][] = [];
    const before = (await store.getAccount(accountId))!.totalUsage;
    const settler = new Settler({ store: poisonedStore(store, poisoned, calls), retries: 2, retryDelayMs: 1 });

    const results = await settleAll(settler, settlements);

    // One batch, tried 1 + 2 times, then one call per charge.
    expect(calls.slice(0, 3).map((batch) => batch.length)).toEqual([10, 10, 10]);
    expect(calls.slice(3).map((batch) => batch.length)).toEqual(Array(10).fill(1));
    results.forEach((result, i) => {
      if (i === 4) expect(result.ok).toBe(false);
      else expect(result).toEqual({ ok: true, outcome: { id: settlements[i]!.generation.id, applied: true } });
    });
    for (const [i, s] of settlements.entries()) {
      expect((await store.getGeneration(s.generation.id)) !== null).toBe(i !== 4);
    }
    const charged = settlements.filter((_, i) => i !== 4).reduce((sum, s) => sum + s.generation.totalCost, 0n);
    expect((await store.getAccount(accountId))!.totalUsage - before).toBe(charged);
    await settler.drain();
  });

  it('does not settle one by one when the store is unavailable: every caller gets that error at once', async () => {
    const settlements = Array.from({ length: 5 }, () =>
      settlementFixture(generationFixture(accountId, keyHash, { createdAt: WEDNESDAY })),
    );
    let calls = 0;
    const down = new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'settle') {
          return async () => {
            calls++;
            throw new TollgateError('store.unavailable', 'Storage is unavailable');
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const settler = new Settler({ store: down, retries: 1, retryDelayMs: 1 });
    const results = await settleAll(settler, settlements);
    expect(calls).toBe(2);
    for (const result of results) {
      expect(result.ok).toBe(false);
      expect(!result.ok && result.error instanceof TollgateError && result.error.code).toBe('store.unavailable');
    }
  });

  if (target.name === 'postgres') {
    it('a NUL byte in a finish reason fails that charge alone on PostgreSQL (the real refusal)', async () => {
      const settlements = Array.from({ length: 6 }, (_, i) =>
        settlementFixture(
          generationFixture(accountId, keyHash, {
            createdAt: WEDNESDAY,
            ...(i === 2 ? { finishReason: 'st\u0000op' } : {}),
          }),
        ),
      );
      const settler = new Settler({ store, retries: 1, retryDelayMs: 1 });
      const results = await settleAll(settler, settlements);
      expect(results.map((r) => r.ok)).toEqual([true, true, false, true, true, true]);
      expect(await store.getGeneration(settlements[2]!.generation.id)).toBeNull();
      expect(await store.getGeneration(settlements[3]!.generation.id)).not.toBeNull();
    });
  }
});
