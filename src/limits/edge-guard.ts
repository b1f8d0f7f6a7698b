/**
 * Edge guard (docs/architecture.md), consulted before any authentication work, so a refusal
 * costs a Map lookup and never reaches the key cache, the store or a provider. Two parts:
 * - overload shedding (default): while the process has capacity nobody is refused; under overload the
 *   addresses sending far more than their share are refused first (load-shedder.ts);
 * - an optional static token bucket per address (`burst` > 0), for operators who want a hard cap.
 * Per process on purpose: floods are shed where they land.
 */
import { TollgateError } from '../core/errors.js';
import { addressSubject } from './address-subject.js';
import { LoadShedder } from './load-shedder.js';
import { derivedMaxInFlight, OverloadMonitor } from './overload-signals.js';
import { TokenBucketLimiter } from './token-bucket.js';

export interface EdgeGuardConfig {
  /** Static per-address bucket: requests a client may send at once; 0 = no static cap. */
  readonly burst: number;
  /** Static per-address bucket: sustained requests per second per client. */
  readonly per_second: number;
  /** Client addresses tracked at once (LRU beyond it). */
  readonly max_clients: number;
  readonly overload: {
    readonly enabled: boolean;
    readonly max_event_loop_delay_ms: number;
    readonly max_event_loop_utilization: number;
    readonly max_in_flight: number | null;
    readonly max_heap_ratio: number;
  };
}

function refusal(message: string, limit: number, retryAfterMs: number, now: number): TollgateError {
  const headers = {
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': '0',
    'X-RateLimit-Reset': String(now + retryAfterMs),
  };
  // Not `{ ...headers, key }`: a flood is answered here, and on Node 20 such a literal gets a hidden
  // class of its own per object (docs/architecture.md, "Hidden classes").
  return new TollgateError('limits.rate_limited', message, {
    headers: Object.assign({}, headers, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) }),
    metadata: { error_type: 'rate_limit_exceeded', limit_source: 'edge', headers },
  });
}

export class EdgeGuard {
  private readonly buckets: TokenBucketLimiter | null;
  private readonly shedder: LoadShedder | null;
  readonly monitor: OverloadMonitor | null;

  constructor(
    private readonly config: EdgeGuardConfig,
    private readonly now: () => number,
  ) {
    this.buckets =
      config.burst > 0 && config.per_second > 0
        ? new TokenBucketLimiter(
            { capacity: config.burst, refillPerSecond: config.per_second },
            { maxKeys: config.max_clients },
          )
        : null;
    const overload = config.overload;
    this.monitor = overload.enabled
      ? new OverloadMonitor({
          maxEventLoopDelayMs: overload.max_event_loop_delay_ms,
          maxEventLoopUtilization: overload.max_event_loop_utilization,
          maxInFlight: overload.max_in_flight ?? derivedMaxInFlight(),
          maxHeapRatio: overload.max_heap_ratio,
        })
      : null;
    this.shedder = overload.enabled ? new LoadShedder(config.max_clients) : null;
  }

  get enabled(): boolean {
    return this.buckets !== null || this.shedder !== null;
  }

  /** Null when `ip` may proceed; otherwise the 429 to answer with. An IPv6 client counts as its /64. */
  check(clientAddress: string): TollgateError | null {
    const now = this.now();
    const ip = addressSubject(clientAddress);
    if (this.shedder && this.monitor) {
      const decision = this.shedder.admit(ip, now, this.monitor.pressure());
      if (decision.shed) {
        return refusal(
          'The gateway is overloaded and this address is sending far more than its share; retry later',
          Math.max(1, Math.floor(decision.fairPerSecond)),
          1_000,
          now,
        );
      }
    }
    if (!this.buckets) return null;
    const taken = this.buckets.take(ip, now);
    if (taken.allowed) return null;
    return refusal(
      'Too many requests from this address; slow down and retry later',
      this.config.burst,
      taken.retryAfterMs,
      now,
    );
  }
}
