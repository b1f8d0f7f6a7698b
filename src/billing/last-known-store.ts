/**
 * The credit gate's view of the store, remembering the last balance and key usage each read
 * returned, so grace admission (`billing.on_store_error: grace`) has something to judge by while the
 * store is out, and reporting every `store.unavailable` to the store health. Bounded: the oldest
 * entries go first.
 *
 * While reads are failing, a read is waited for `outageReadWaitMs` at most: a database that stopped
 * answering (frozen, partitioned: no reset) fails a statement only at its deadline (15 s) or a new
 * connection at its own (5 s), and every admission whose snapshot expired waited that long — for a
 * grace answer or a refusal (an outside check: 503s after 5–15 s throughout a 45 s freeze). The read
 * goes on meanwhile; its answer is remembered, and ends the outage, whenever it comes.
 */
import { TollgateError } from '../core/errors.js';
import type { AccountRecord, KeyUsage, Store } from '../store/types.js';
import type { UsagePeriods } from '../core/usage-window.js';
import type { StoreHealth } from './store-health.js';

const MAX_ENTRIES = 100_000;
export const OUTAGE_READ_WAIT_MS = 500;

/** `read`, or store.unavailable once `waitMs` pass first (its own end is handled where it was made). */
function waitAtMost<T>(read: Promise<T>, waitMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new TollgateError('store.unavailable', 'The store is not answering: an outage is in progress')),
      waitMs,
    );
    read.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error: unknown) => (clearTimeout(timer), reject(error)),
    );
  });
}

export interface LastKnown {
  account(id: string): AccountRecord | null;
  /** The key's usage, if it was last read for the same UTC day (the day counter must not leak into the next). */
  keyUsage(hash: string, periods: UsagePeriods): KeyUsage | null;
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_ENTRIES) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** A Store whose account and key-usage reads are remembered; every other member is the store's own. */
export function lastKnownStore(
  store: Store,
  health: StoreHealth,
  outageReadWaitMs = OUTAGE_READ_WAIT_MS,
): { store: Store; lastKnown: LastKnown } {
  const accounts = new Map<string, AccountRecord>();
  const usages = new Map<string, { periods: UsagePeriods; usage: KeyUsage }>();
  const bounded = <T>(read: () => Promise<T>): Promise<T> =>
    health.readsFailing ? waitAtMost(read(), outageReadWaitMs) : read();
  const readAccount = async (id: string): Promise<AccountRecord | null> => {
    try {
      const account = await store.getAccount(id);
      health.recovered('read');
      if (account) remember(accounts, id, account);
      return account;
    } catch (error) {
      health.failed(error, 'read');
      throw error;
    }
  };
  const readKeyUsage = async (hashes: readonly string[], periods: UsagePeriods): Promise<Map<string, KeyUsage>> => {
    try {
      const result = await store.getKeyUsage(hashes, periods);
      health.recovered('read');
      for (const [hash, usage] of result) remember(usages, hash, { periods, usage });
      return result;
    } catch (error) {
      health.failed(error, 'read');
      throw error;
    }
  };
  const getAccount = (id: string) => bounded(() => readAccount(id));
  const getKeyUsage = (hashes: readonly string[], periods: UsagePeriods) =>
    bounded(() => readKeyUsage(hashes, periods));
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === 'getAccount') return getAccount;
      if (property === 'getKeyUsage') return getKeyUsage;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store: wrapped,
    lastKnown: {
      account: (id) => accounts.get(id) ?? null,
      keyUsage: (hash, periods) => {
        const hit = usages.get(hash);
        return hit &&
          hit.periods.day === periods.day &&
          hit.periods.week === periods.week &&
          hit.periods.month === periods.month
          ? hit.usage
          : null;
      },
    },
  };
}
