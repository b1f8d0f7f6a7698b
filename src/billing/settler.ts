/**
 * Group commit. Charges are queued and written by one flusher, many per transaction, so throughput
 * does not pay one durable commit per request; each caller still waits until its own charge is
 * committed before it reports the request done.
 */
import type { SettleOutcome, Settlement, Store } from '../store/types.js';

interface Pending {
  settlement: Settlement;
  resolve: (outcome: SettleOutcome) => void;
  reject: (error: unknown) => void;
}

export interface SettlerOptions {
  store: Store;
  maxBatch?: number;
  /** Retries of a failed batch before its callers get the error (the store may be restarting). */
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
    this.retries = options.retries ?? 3;
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
    const settlements = batch.map((p) => p.settlement);
    for (let attempt = 0; ; attempt++) {
      try {
        const outcomes = await this.options.store.settle(settlements);
        this.options.onCommitted?.(settlements, outcomes);
        batch.forEach((p, i) => p.resolve(outcomes[i]!));
        return;
      } catch (error) {
        if (attempt >= this.retries) {
          for (const p of batch) p.reject(error);
          return;
        }
        await new Promise((r) => setTimeout(r, this.retryDelayMs * 2 ** attempt));
      }
    }
  }
}
