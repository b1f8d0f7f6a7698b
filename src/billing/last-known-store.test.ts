import { afterEach, describe, expect, it, vi } from 'vitest';
import { TollgateError } from '../core/errors.js';
import type { AccountRecord, Store } from '../store/types.js';
import { lastKnownStore } from './last-known-store.js';
import { StoreHealth } from './store-health.js';

const ACCOUNT = { id: 'acct_1' } as AccountRecord;
const down = () => new TollgateError('store.unavailable', 'down');

/** A store whose getAccount answers as `answer` says at the time of the call. */
function storeAnswering(answer: () => Promise<AccountRecord | null>): Store {
  return { getAccount: () => answer() } as unknown as Store;
}

describe('lastKnownStore while reads fail', () => {
  afterEach(() => vi.useRealTimers());

  it('a read of a store that stopped answering is given up after the wait (store.unavailable), and its late answer still ends the outage', async () => {
    vi.useFakeTimers();
    const health = new StoreHealth(() => Date.now());
    let release: (account: AccountRecord) => void = () => undefined;
    let mode: 'fail' | 'hang' = 'fail';
    const store = storeAnswering(() =>
      mode === 'fail' ? Promise.reject(down()) : new Promise((resolve) => (release = resolve)),
    );
    const { store: wrapped, lastKnown } = lastKnownStore(store, health, 500);
    await expect(wrapped.getAccount('acct_1')).rejects.toMatchObject({ code: 'store.unavailable' });
    expect(health.readsFailing).toBe(true);

    mode = 'hang'; // frozen: no answer, no reset
    const read = wrapped.getAccount('acct_1');
    const outcome = expect(read).rejects.toMatchObject({ code: 'store.unavailable' });
    await vi.advanceTimersByTimeAsync(500);
    await outcome;
    expect(health.inOutage).toBe(true);

    release(ACCOUNT); // the store answers at last
    await vi.advanceTimersByTimeAsync(0);
    expect(health.inOutage).toBe(false);
    expect(lastKnown.account('acct_1')).toBe(ACCOUNT);
  });

  it('reads under way when the first one fails are given up after the wait too (they would hold their admission for the statement deadline)', async () => {
    vi.useFakeTimers();
    const health = new StoreHealth(() => Date.now());
    let calls = 0;
    let failFirstHung: (error: unknown) => void = () => undefined;
    const store = storeAnswering(() => {
      calls += 1;
      // The first read fails later (its statement deadline); the next two hang for good.
      return calls === 1 ? new Promise((_, reject) => (failFirstHung = reject)) : new Promise(() => undefined);
    });
    const { store: wrapped } = lastKnownStore(store, health, 500);
    const first = wrapped.getAccount('acct_1');
    const firstOutcome = expect(first).rejects.toMatchObject({ code: 'store.unavailable' });
    const waiting = [wrapped.getAccount('acct_2'), wrapped.getAccount('acct_3')];
    const outcomes = waiting.map((read) => expect(read).rejects.toMatchObject({ code: 'store.unavailable' }));
    let givenUp = 0;
    for (const read of waiting) read.catch(() => (givenUp += 1));
    await vi.advanceTimersByTimeAsync(10_000); // long past the wait: nothing is cut before a failure
    expect(givenUp).toBe(0);
    failFirstHung(down());
    await firstOutcome;
    expect(health.readsFailing).toBe(true);
    await vi.advanceTimersByTimeAsync(499);
    expect(givenUp).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all(outcomes);
    expect(givenUp).toBe(2);
  });

  it('without an outage a read is waited for however long it takes', async () => {
    vi.useFakeTimers();
    const health = new StoreHealth(() => Date.now());
    const { store: wrapped } = lastKnownStore(
      storeAnswering(() => new Promise((resolve) => setTimeout(() => resolve(ACCOUNT), 10_000))),
      health,
      500,
    );
    const read = wrapped.getAccount('acct_1');
    await vi.advanceTimersByTimeAsync(10_000);
    await expect(read).resolves.toBe(ACCOUNT);
  });
});
