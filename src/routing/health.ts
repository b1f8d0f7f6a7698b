/**
 * Health of every endpoint (model × provider): its circuit breaker, its measured statistics, and a
 * rate-limit cool-down from the upstream's `Retry-After`. The planner orders by it; the execute loop
 * reports every attempt to it; `GET /models/{id}/endpoints` shows its statistics.
 */
import type { FailureType } from '../providers/types.js';
import { CircuitBreaker, DEFAULT_BREAKER, type BreakerConfig, type BreakerState } from './circuit-breaker.js';
import { EndpointStats, type EndpointStatsSnapshot } from './endpoint-stats.js';

export interface EndpointHealth {
  breaker: CircuitBreaker;
  stats: EndpointStats;
  /** Epoch ms before which the upstream asked us not to come back (Retry-After). */
  coolingUntil: number;
}

/**
 * The longest pause an upstream's `Retry-After` buys, here and from the fleet (fleet-health.ts): a
 * cooling endpoint is only tried after the others, and a provider that asks for a day (or sends a
 * nonsense figure) is looked at again after this; a new refusal cools it again.
 */
export const MAX_COOLING_MS = 600_000;

/** Failures that say the endpoint is unhealthy. The caller's own faults say nothing about it. */
export function countsAgainstHealth(type: FailureType): boolean {
  return (
    type === 'connection' ||
    type === 'timeout' ||
    type === 'server' ||
    type === 'invalid_response' ||
    type === 'auth' ||
    type === 'not_found'
  );
}

/** What this process learns about an endpoint that the rest of the fleet should know (routing/fleet-health.ts). */
export interface HealthListener {
  /** The breaker tripped (or a probe failed): open for `ms` more. */
  opened(key: string, ms: number): void;
  /** A success closed a tripped breaker. */
  closed(key: string): void;
  /** The upstream asked for a pause (Retry-After): cooling for `ms` more. */
  cooling(key: string, ms: number): void;
  /** One outcome that counts for uptime. */
  outcome(key: string, ok: boolean): void;
}

/** What another process learnt, applied here without being told back. */
export type RemoteHealth =
  | { type: 'opened' | 'cooling'; key: string; ms: number }
  | { type: 'closed'; key: string }
  | { type: 'outcomes'; key: string; ok: number; failed: number };

export class HealthRegistry {
  private readonly endpoints = new Map<string, EndpointHealth>();
  private listener: HealthListener | null = null;

  constructor(private readonly breakerConfig: BreakerConfig = DEFAULT_BREAKER) {}

  /** Tells `listener` of every local change the fleet should know (one listener; null to stop). */
  listen(listener: HealthListener | null): void {
    this.listener = listener;
  }

  /** Applies what another process saw. Opening never shortens a local open; closing only closes. */
  applyRemote(event: RemoteHealth, now: number): void {
    const health = this.get(event.key);
    switch (event.type) {
      case 'opened':
        health.breaker.openUntilAtLeast(now + event.ms);
        break;
      case 'closed':
        health.breaker.onSuccess();
        break;
      case 'cooling':
        health.coolingUntil = Math.max(health.coolingUntil, now + event.ms);
        break;
      case 'outcomes':
        health.stats.recordRemote(now, event.ok, event.failed);
    }
  }

  static keyOf(modelId: string, providerId: string): string {
    return `${modelId}|${providerId}`;
  }

  get(key: string): EndpointHealth {
    let health = this.endpoints.get(key);
    if (!health) {
      health = { breaker: new CircuitBreaker(this.breakerConfig), stats: new EndpointStats(), coolingUntil: 0 };
      this.endpoints.set(key, health);
    }
    return health;
  }

  state(key: string, now: number): BreakerState {
    return this.endpoints.get(key)?.breaker.state(now) ?? 'closed';
  }

  /**
   * 0 = healthy, 1 = cooling down (a 429, or a Retry-After on a failure), 2 = breaker open or its probe out. Lower is tried first.
   * A half-open endpoint with its probe slot free ranks as healthy: unless some request tries it, a
   * recovered provider would never get its traffic back while a fallback keeps answering.
   */
  rank(key: string, now: number): number {
    const health = this.endpoints.get(key);
    if (!health) return 0;
    if (health.breaker.state(now) !== 'closed' && !health.breaker.probeFree(now)) return 2;
    return health.coolingUntil > now ? 1 : 0;
  }

  /** May an attempt be sent to this endpoint now? Reserves the probe slot of a half-open breaker. */
  tryAcquire(key: string, now: number): boolean {
    return this.get(key).breaker.tryAcquire(now);
  }

  /** Milliseconds until this endpoint's open breaker lets a probe through. */
  retryInMs(key: string, now: number): number {
    return this.endpoints.get(key)?.breaker.retryInMs(now) ?? 0;
  }

  /** Give back a probe slot reserved by tryAcquire but never used. */
  release(key: string): void {
    this.endpoints.get(key)?.breaker.release();
  }

  recordThroughput(key: string, now: number, tokensPerSecond: number): void {
    this.get(key).stats.recordSample(now, null, tokensPerSecond);
  }

  recordSuccess(key: string, now: number, latencyMs: number | null, tokensPerSecond: number | null): void {
    const health = this.get(key);
    this.closeBreaker(key, health);
    health.stats.recordSuccess(now, latencyMs, tokensPerSecond);
    this.listener?.outcome(key, true);
  }

  recordFailure(key: string, now: number, type: FailureType, retryAfterMs: number | null): void {
    const health = this.get(key);
    if (type === 'rate_limited') {
      this.cool(key, health, now, retryAfterMs ?? 1000);
      health.breaker.release();
      return;
    }
    if (countsAgainstHealth(type)) {
      // An overloaded or unavailable upstream (503, Anthropic's 529) that says when to come back is
      // tried after the others until then, as after a 429 — besides counting against its breaker.
      if (retryAfterMs !== null) this.cool(key, health, now, retryAfterMs);
      const before = health.breaker.openUntilMs;
      health.breaker.onFailure(now);
      health.stats.recordFailure(now);
      const after = health.breaker.openUntilMs;
      if (after !== null && after !== before) this.listener?.opened(key, after - now);
      this.listener?.outcome(key, false);
    } else {
      // The provider answered (it judged the request): it is up.
      this.closeBreaker(key, health);
    }
  }

  private cool(key: string, health: EndpointHealth, now: number, ms: number): void {
    const until = Math.max(health.coolingUntil, now + Math.min(ms, MAX_COOLING_MS));
    if (until > health.coolingUntil) this.listener?.cooling(key, until - now);
    health.coolingUntil = until;
  }

  private closeBreaker(key: string, health: EndpointHealth): void {
    const wasOpen = health.breaker.openUntilMs !== null;
    health.breaker.onSuccess();
    if (wasOpen) this.listener?.closed(key);
  }

  /** Measured time to first token (p99 over 30 min) and its sample count; null when never measured. */
  firstTokenLatency(key: string, now: number): { p99: number; samples: number } | null {
    return this.endpoints.get(key)?.stats.firstTokenLatency(now) ?? null;
  }

  snapshot(key: string, now: number): EndpointStatsSnapshot | null {
    return this.endpoints.get(key)?.stats.snapshot(now) ?? null;
  }
}
