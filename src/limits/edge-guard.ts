/**
 * Edge guard (design.md request path step 1): a token bucket per client IP, consulted before any
 * authentication work, so a flood from one address costs a Map lookup per request and never reaches
 * the key cache, the store or a provider. Per process on purpose (see token-bucket.ts): it sheds
 * floods where they land; the generous defaults are far above any single client's honest use.
 */
import { TollgateError } from '../core/errors.js';
import { TokenBucketLimiter } from './token-bucket.js';

export interface EdgeGuardConfig {
  /** Requests a client may send at once; 0 disables the guard. */
  readonly burst: number;
  /** Sustained requests per second per client. */
  readonly per_second: number;
  /** Client buckets held at once (LRU beyond it). */
  readonly max_clients: number;
}

export class EdgeGuard {
  private readonly buckets: TokenBucketLimiter | null;

  constructor(
    private readonly config: EdgeGuardConfig,
    private readonly now: () => number,
  ) {
    this.buckets = config.burst > 0 && config.per_second > 0 ? new TokenBucketLimiter({ capacity: config.burst, refillPerSecond: config.per_second }, { maxKeys: config.max_clients }) : null;
  }

  get enabled(): boolean {
    return this.buckets !== null;
  }

  /** Null when `ip` may proceed; otherwise the 429 to answer with. */
  check(ip: string): TollgateError | null {
    if (!this.buckets) return null;
    const now = this.now();
    const taken = this.buckets.take(ip, now);
    if (taken.allowed) return null;
    const headers = {
      'X-RateLimit-Limit': String(this.config.burst),
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(now + taken.retryAfterMs),
    };
    return new TollgateError('limits.rate_limited', 'Too many requests from this address; slow down and retry later', {
      headers: { ...headers, 'Retry-After': String(Math.max(1, Math.ceil(taken.retryAfterMs / 1000))) },
      metadata: { error_type: 'rate_limit_exceeded', limit_source: 'edge', headers },
    });
  }
}
