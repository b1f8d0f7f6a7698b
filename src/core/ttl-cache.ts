/**
 * A bounded map with per-entry expiry and coalesced loads: N concurrent misses for one key cause one
 * load. Bounded so that a flood of distinct unknown keys cannot grow memory without limit.
 *
 * With `staleOnError`, an expired entry answers when its reload fails with an error the predicate
 * names (the store unreachable), for up to `ms` past its expiry — and is then served for a second
 * without asking again, so an outage does not cost every request a failed load. An invalidated entry
 * is gone, never served stale.
 */
export interface StaleOnError {
  ms: number;
  when(error: unknown): boolean;
}

/** How long a stale entry is served after a failed reload before the next reload is tried. */
const RETRY_AFTER_ERROR_MS = 1_000;

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number; staleUntil: number }>();
  private readonly loading = new Map<string, Promise<V>>();
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number,
    private readonly staleOnError: StaleOnError | null = null,
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) return hit.value;
    const pending = this.loading.get(key);
    if (pending) return pending;
    const startedIn = this.generation;
    const promise = load().then(
      (value) => {
        this.loading.delete(key);
        // A load that raced with an invalidation must not resurrect stale data.
        if (startedIn === this.generation) this.set(key, value);
        return value;
      },
      (error: unknown) => {
        this.loading.delete(key);
        const stale = this.entries.get(key);
        const now = this.now();
        if (stale && stale.staleUntil > now && this.staleOnError?.when(error) === true) {
          stale.expiresAt = Math.min(stale.staleUntil, now + RETRY_AFTER_ERROR_MS);
          return stale.value;
        }
        throw error;
      },
    );
    this.loading.set(key, promise);
    return promise;
  }

  peek(key: string): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresAt > this.now() ? hit.value : undefined;
  }

  set(key: string, value: V): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.delete(key);
    const expiresAt = this.now() + this.ttlMs;
    this.entries.set(key, { value, expiresAt, staleUntil: expiresAt + (this.staleOnError?.ms ?? 0) });
  }

  /** Replaces a live entry's value without extending its life (so other processes' changes still show up on expiry). */
  replace(key: string, value: V): void {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) hit.value = value;
  }

  invalidate(key: string): void {
    this.generation++;
    this.entries.delete(key);
    this.loading.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
    this.loading.clear();
  }
}
