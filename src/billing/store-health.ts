/**
 * Whether the store (SQLite or PostgreSQL) is in an outage, as seen from this process: it starts at
 * the first `store.unavailable` of a read or a charge, and ends when the failing kind of call works
 * again: reads by a read, charges only by a committed charge (or, with nothing to charge, a probe
 * transaction) — a store that still answers reads but refuses writes (disk full, read-only) is still
 * out. Admission and `/readyz` read it.
 */
import { isTollgateError } from '../core/errors.js';

export function isStoreUnavailable(error: unknown): boolean {
  return isTollgateError(error) && error.code === 'store.unavailable';
}

export type StoreOperation = 'read' | 'write';

export class StoreHealth {
  private readonly failing = new Set<StoreOperation>();
  private outageSince: number | null = null;
  private readonly listeners = new Set<(inOutage: boolean) => void>();

  constructor(private readonly now: () => number) {}

  /** Epoch ms when the current outage began, or null. */
  get since(): number | null {
    return this.outageSince;
  }

  get inOutage(): boolean {
    return this.outageSince !== null;
  }

  /** Reads are failing (the store is down or not answering; a full disk fails writes only). */
  get readsFailing(): boolean {
    return this.failing.has('read');
  }

  /** Charges cannot be committed (the store is down, or its disk full or read-only). */
  get writesFailing(): boolean {
    return this.failing.has('write');
  }

  /** A store call failed; only `store.unavailable` counts (a refused row is not an outage). */
  failed(error: unknown, operation: StoreOperation): void {
    if (!isStoreUnavailable(error)) return;
    this.failing.add(operation);
    if (this.outageSince !== null) return;
    this.outageSince = this.now();
    for (const listener of this.listeners) listener(true);
  }

  /** A call succeeded: a read clears read failures only; a committed write clears both. */
  recovered(operation: StoreOperation): void {
    if (operation === 'write') this.failing.clear();
    else this.failing.delete('read');
    if (this.outageSince === null || this.failing.size > 0) return;
    this.outageSince = null;
    for (const listener of this.listeners) listener(false);
  }

  onChange(listener: (inOutage: boolean) => void): void {
    this.listeners.add(listener);
  }
}
