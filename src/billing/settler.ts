/**
 * Group commit. Charges are queued and written by one flusher, many per transaction, so throughput
 * does not pay one durable commit per request; each caller still waits until its own charge is
 * committed before it reports the request done.
 */
import { TollgateError } from '../core/errors.js';
import type { SettleOutcome, Settlement, Store } from '../store/types.js';

interface Pending {
  settlement: Settlement;
  resolve: (outcome: SettleOutcome) => void;
  reject: (error: unknown) => void;
}

export interface SettlerOptions {
  store: Store;
  maxBatch?: number;
  /**
   * Retries of a failed batch (the store may be restarting). After them, a batch the store refused
   * (not `store.unavailable`) is settled one charge at a time, so only a charge that fails alone fails.
   */
  retries?: number;
  retryDelayMs?: number;
  onCommitted?: (settlements: readonly Settlement[], outcomes: readonly SettleOutcome[]) => void;
}

export class Settler {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private readonly maxBatch: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;

  constructor(private readonly options: SettlerOptions) {
    this.maxBatch = options.maxBatch ?? 512;
    // 200 ms doubling five times rides out ~6 s of store unavailability (a PostgreSQL restart or failover).
    this.retries = options.retries ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 200;
  }

  settle(settlement: Settlement): Promise<SettleOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ settlement, resolve, reject });
      // Wait one macrotask so that charges finishing in the same I/O phase share a commit.
      this.flushing ??= new Promise<void>((done) => setImmediate(done)).then(() => this.flush());
    });
  }

  /** Resolves when every queued charge has been committed (or failed). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        await this.commit(batch);
      }
    } finally {
      this.flushing = null;
    }
  }

  private async commit(batch: Pending[]): Promise<void> {
    const error = await this.commitWithRetries(batch);
    if (error === null) return;
    if (batch.length === 1 || isStoreUnavailable(error)) {
      for (const p of batch) p.reject(error);
      return;
    }
    // The store answered but refused the batch: one bad charge (a value the database rejects) must not
    // fail up to maxBatch unrelated callers. Settle each on its own, once, so only the bad one fails;
    // if the store goes away meanwhile, the rest get that error without more tries.
    let unavailable: unknown = null;
    for (const pending of batch) {
      if (unavailable !== null) {
        pending.reject(unavailable);
        continue;
      }
      const alone = await this.tryCommit([pending]);
      if (alone === null) continue;
      pending.reject(alone);
      if (isStoreUnavailable(alone)) unavailable = alone;
    }
  }

  /** Commits the batch, retrying with backoff; the last error when every try failed, else null. */
  private async commitWithRetries(batch: Pending[]): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const error = await this.tryCommit(batch);
      if (error === null) return null;
      if (attempt >= this.retries) return error;
      await new Promise((r) => setTimeout(r, this.retryDelayMs * 2 ** attempt));
    }
  }

  /** One store.settle of the batch; resolves its callers when it committed. The error, or null. */
  private async tryCommit(batch: Pending[]): Promise<unknown> {
    const settlements = batch.map((p) => p.settlement);
    let outcomes: SettleOutcome[];
    try {
      outcomes = await this.options.store.settle(settlements);
    } catch (error) {
      return error ?? new Error('store.settle failed');
    }
    try {
      this.options.onCommitted?.(settlements, outcomes);
    } catch {
      // A metrics hook; the charges are committed whatever it does.
    }
    batch.forEach((p, i) => p.resolve(outcomes[i]!));
    return null;
  }
}

function isStoreUnavailable(error: unknown): boolean {
  return error instanceof TollgateError && error.code === 'store.unavailable';
}
