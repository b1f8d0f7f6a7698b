/**
 * The credit gate's view of the store, remembering the last balance and key usage each read
 * returned, so grace admission (`billing.on_store_error: grace`) has something to judge by while the
 * store is out, and reporting every `store.unavailable` to the store health. Bounded: the oldest
 * entries go first.
 *
 * While reads are failing, a read is waited for `outageReadWaitMs` at most — and so, from the first
 * failure on, is every read already under way: a database that stopped answering (frozen,
 * partitioned: no reset) fails a statement only at its deadline (15 s) or a new connection at its own
 * (5 s), and every admission whose snapshot expired waited that long — for a grace answer or a
 * refusal (an outside check: 503s after 5–15 s throughout a 45 s freeze; a re-check: reads started
 * before the first failure still waited their 15 s). The read goes on meanwhile; its answer is
 * remembered, and ends the outage, whenever it comes.
 */
import { TollgateError } from '../core/errors.js';
import type { AccountRecord, KeyUsage, Store } from '../store/types.js';
import type { UsagePeriods } from '../core/usage-window.js';
import type { StoreHealth } from './store-health.js';

const MAX_ENTRIES = 100_000;
export const OUTAGE_READ_WAIT_MS = 500;

/** Reads under way: each is given up `waitMs` after it is cut (reads began to fail). */
class BoundedReads {
  private readonly cuts = new Set<() => void>();

  constructor(private readonly waitMs: number) {}

  /**
   * `read`, or store.unavailable once `waitMs` pass after it was cut — at once when `failing`, else
   * when `cutAll` comes while it is still under way. Its own end is handled where it was made.
   */
  wait<T>(read: Promise<T>, failing: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const cut = () => {
        this.cuts.delete(cut);
        timer = setTimeout(
          () => reject(new TollgateError('store.unavailable', 'The store is not answering: an outage is in progress')),
          this.waitMs,
        );
      };
      const settle = () => {
        this.cuts.delete(cut);
        clearTimeout(timer);
      };
      if (failing) cut();
      else this.cuts.add(cut);
      read.then(
        (value) => (settle(), resolve(value)),
        (error: unknown) => (settle(), reject(error)),
      );
    });
  }

  /** Reads began to fail: those already waiting wait `waitMs` more at most. */
  cutAll(): void {
    for (const cut of [...this.cuts]) cut();
  }
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
  const reads = new BoundedReads(outageReadWaitMs);
  const bounded = <T>(read: () => Promise<T>): Promise<T> => reads.wait(read(), health.readsFailing);
  const failed = (error: unknown) => {
    const before = health.readsFailing;
    health.failed(error, 'read');
    // The first failure of an outage: the reads that started before it are not waited for past the bound either.
    if (!before && health.readsFailing) reads.cutAll();
  };
  const readAccount = async (id: string): Promise<AccountRecord | null> => {
    try {
      const account = await store.getAccount(id);
      health.recovered('read');
      if (account) remember(accounts, id, account);
      return account;
    } catch (error) {
      failed(error);
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
      failed(error);
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
