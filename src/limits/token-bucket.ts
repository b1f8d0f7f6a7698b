/**
 * Token buckets for the edge guard (per client IP, before any authentication work). A bucket allows
 * bursts up to `capacity` and a sustained `refillPerSecond`. Per process on purpose: edge protection
 * sheds floods cheaply where they land; exact fleet-wide counting is the account limiter's job.
 */
import { ExpiringMap } from './expiring-map.js';

export interface TokenBucketConfig {
  readonly capacity: number;
  readonly refillPerSecond: number;
}

export interface BucketState {
  readonly tokens: number;
  readonly updatedAt: number;
}

export interface TakeResult {
  readonly allowed: boolean;
  /** Whole tokens left after this take. */
  readonly remaining: number;
  /** 0 when allowed; otherwise how long until `cost` tokens are back. */
  readonly retryAfterMs: number;
  readonly state: BucketState;
}

export function assertValidBucketConfig(config: TokenBucketConfig): void {
  if (!(config.capacity >= 1) || !Number.isFinite(config.capacity))
    throw new Error('token bucket capacity must be ≥ 1');
  if (!(config.refillPerSecond > 0) || !Number.isFinite(config.refillPerSecond))
    throw new Error('token bucket refillPerSecond must be > 0');
}

/** The bucket at `now`; an unknown bucket is full. A clock step backwards refills nothing. */
export function refill(state: BucketState | undefined, config: TokenBucketConfig, now: number): BucketState {
  if (state === undefined) return { tokens: config.capacity, updatedAt: now };
  const elapsedMs = Math.max(0, now - state.updatedAt);
  return {
    tokens: Math.min(config.capacity, state.tokens + (elapsedMs * config.refillPerSecond) / 1000),
    updatedAt: Math.max(now, state.updatedAt),
  };
}

export function take(state: BucketState | undefined, config: TokenBucketConfig, now: number, cost = 1): TakeResult {
  if (!(cost > 0) || cost > config.capacity) throw new Error(`cost must be in (0, capacity], got ${cost}`);
  const current = refill(state, config, now);
  if (current.tokens >= cost) {
    const next = { tokens: current.tokens - cost, updatedAt: current.updatedAt };
    return { allowed: true, remaining: Math.floor(next.tokens), retryAfterMs: 0, state: next };
  }
  const retryAfterMs = Math.ceil(((cost - current.tokens) * 1000) / config.refillPerSecond);
  return { allowed: false, remaining: Math.floor(current.tokens), retryAfterMs, state: current };
}

/** When the bucket is full again: from then on it is indistinguishable from an absent one. */
export function fullAt(state: BucketState, config: TokenBucketConfig): number {
  return state.updatedAt + Math.ceil(((config.capacity - state.tokens) * 1000) / config.refillPerSecond);
}

export interface TokenBucketLimiterOptions {
  /** Buckets held at once; beyond it the least recently used one is dropped (that key starts full again). */
  maxKeys?: number;
  sweepEveryMs?: number;
}

export class TokenBucketLimiter {
  private readonly buckets: ExpiringMap<BucketState>;

  constructor(
    private readonly config: TokenBucketConfig,
    options: TokenBucketLimiterOptions = {},
  ) {
    assertValidBucketConfig(config);
    this.buckets = new ExpiringMap<BucketState>({
      maxEntries: options.maxKeys ?? 100_000,
      sweepEveryMs: options.sweepEveryMs ?? 10_000,
    });
  }

  get size(): number {
    return this.buckets.size;
  }

  get evictions(): number {
    return this.buckets.evictions;
  }

  take(key: string, now: number, cost = 1): Omit<TakeResult, 'state'> {
    const result = take(this.buckets.get(key, now), this.config, now, cost);
    // A bucket expires when it is full: dropping it then loses nothing, so memory follows active keys.
    this.buckets.set(key, result.state, fullAt(result.state, this.config), now);
    return { allowed: result.allowed, remaining: result.remaining, retryAfterMs: result.retryAfterMs };
  }
}
