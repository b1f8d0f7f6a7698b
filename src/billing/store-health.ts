/**
 * Whether the store (SQLite or PostgreSQL) is in an outage, as seen from this process: it starts at
 * the first `store.unavailable` of a read or a charge, and ends only when a charge (or, with nothing
 * to charge, a probe transaction) commits again — a store that still answers reads but refuses
 * writes (disk full, read-only) is still out. Admission and `/readyz` read it.
 */
import { isTollgateError } from '../core/errors.js';

export function isStoreUnavailable(error: unknown): boolean {
  return isTollgateError(error) && error.code === 'store.unavailable';
}

export class StoreHealth {
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

  /** A store call failed; only `store.unavailable` counts (a refused row is not an outage). */
  failed(error: unknown): void {
    if (!isStoreUnavailable(error) || this.outageSince !== null) return;
    this.outageSince = this.now();
    for (const listener of this.listeners) listener(true);
  }

  /** A write committed: the store is back. */
  recovered(): void {
    if (this.outageSince === null) return;
    this.outageSince = null;
    for (const listener of this.listeners) listener(false);
  }

  onChange(listener: (inOutage: boolean) => void): void {
    this.listeners.add(listener);
  }
}
