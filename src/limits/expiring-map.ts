/**
 * A Map whose entries carry their own expiry (in the caller's `now`), with a hard size cap, for the
 * in-process limiters. Expired entries are swept at most once per `sweepEveryMs`, so the sweep's
 * O(n) is amortised; above `maxEntries` the least recently used entry is dropped. Dropping a live
 * counter forgets usage (fails open for that subject), which only happens when more subjects are
 * active at once than the cap allows — the price of memory that a flood of subjects cannot grow.
 */
export interface ExpiringMapOptions {
  maxEntries: number;
  sweepEveryMs: number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
}

export class ExpiringMap<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private lastSweep = -Infinity;
  /** Live entries dropped because of the cap (a gauge for operators: raise the cap when it grows). */
  evictions = 0;

  constructor(private readonly options: ExpiringMapOptions) {
    if (!Number.isSafeInteger(options.maxEntries) || options.maxEntries < 1)
      throw new Error('maxEntries must be a positive integer');
    if (!(options.sweepEveryMs > 0)) throw new Error('sweepEveryMs must be positive');
  }

  get size(): number {
    return this.entries.size;
  }

  /** The live value, or undefined; a hit becomes the most recently used entry. */
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= now) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Like `get` without touching recency or deleting anything (for read-only paths). */
  peek(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.expiresAt > now ? entry.value : undefined;
  }

  set(key: string, value: V, expiresAt: number, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt });
    if (now - this.lastSweep >= this.options.sweepEveryMs) this.sweep(now);
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.entries().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value[0]);
      if (oldest.value[1].expiresAt > now) this.evictions++;
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
