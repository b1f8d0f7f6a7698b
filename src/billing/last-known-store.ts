/**
 * The credit gate's view of the store, remembering the last balance and key usage each read
 * returned, so grace admission (`billing.on_store_error: grace`) has something to judge by while the
 * store is out, and reporting every `store.unavailable` to the store health. Bounded: the oldest
 * entries go first.
 */
import type { AccountRecord, KeyUsage, Store } from '../store/types.js';
import type { UsagePeriods } from '../core/usage-window.js';
import type { StoreHealth } from './store-health.js';

const MAX_ENTRIES = 100_000;

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
export function lastKnownStore(store: Store, health: StoreHealth): { store: Store; lastKnown: LastKnown } {
  const accounts = new Map<string, AccountRecord>();
  const usages = new Map<string, { periods: UsagePeriods; usage: KeyUsage }>();
  const getAccount = async (id: string): Promise<AccountRecord | null> => {
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
  const getKeyUsage = async (hashes: readonly string[], periods: UsagePeriods): Promise<Map<string, KeyUsage>> => {
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
