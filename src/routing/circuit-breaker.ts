/**
 * Per-endpoint circuit breaker: after `failureThreshold` consecutive failures the endpoint is skipped
 * ("open") for a cool-down that doubles on each failed probe up to `maxOpenMs`; when the cool-down is
 * over, one request at a time may probe it ("half-open"); a success closes it. So a provider that is
 * down costs callers almost nothing, and one that recovers gets traffic back within one cool-down.
 * Pure state machine; `now` is passed in.
 */

export interface BreakerConfig {
  failureThreshold: number;
  openMs: number;
  maxOpenMs: number;
  /** A probe that has not reported back after this long no longer blocks other probes. */
  probeTimeoutMs: number;
}

export const DEFAULT_BREAKER: BreakerConfig = {
  failureThreshold: 3,
  openMs: 5_000,
  maxOpenMs: 15_000,
  probeTimeoutMs: 30_000,
};

export type BreakerState = 'closed' | 'open' | 'half_open';

export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openUntil = 0;
  private currentOpenMs: number;
  private probeStartedAt: number | null = null;
  private tripped = false;

  constructor(private readonly config: BreakerConfig = DEFAULT_BREAKER) {
    this.currentOpenMs = config.openMs;
  }

  state(now: number): BreakerState {
    if (!this.tripped) return 'closed';
    return now < this.openUntil ? 'open' : 'half_open';
  }

  /** May a request be sent now? In half-open state this reserves the single probe slot. */
  tryAcquire(now: number): boolean {
    const state = this.state(now);
    if (state === 'closed') return true;
    if (!this.probeFree(now)) return false;
    this.probeStartedAt = now;
    return true;
  }

  /** Half-open with no probe out: the next request may probe. */
  probeFree(now: number): boolean {
    if (this.state(now) !== 'half_open') return false;
    return this.probeStartedAt === null || now - this.probeStartedAt >= this.config.probeTimeoutMs;
  }

  onSuccess(): void {
    this.consecutiveFailures = 0;
    this.tripped = false;
    this.probeStartedAt = null;
    this.currentOpenMs = this.config.openMs;
  }

  onFailure(now: number): void {
    this.consecutiveFailures++;
    const probing = this.tripped && this.probeStartedAt !== null;
    this.probeStartedAt = null;
    if (probing) {
      this.currentOpenMs = Math.min(this.config.maxOpenMs, this.currentOpenMs * 2);
      this.openUntil = now + this.currentOpenMs;
      return;
    }
    if (!this.tripped && this.consecutiveFailures >= this.config.failureThreshold) {
      this.tripped = true;
      this.openUntil = now + this.currentOpenMs;
    }
  }

  /** Epoch ms until which the breaker is open once tripped (null while closed): what other processes are told. */
  get openUntilMs(): number | null {
    return this.tripped ? this.openUntil : null;
  }

  /** Another process saw this endpoint fail: skip it until `until`, as if it had tripped here (never shortens). */
  openUntilAtLeast(until: number): void {
    if (this.tripped && this.openUntil >= until) return;
    this.tripped = true;
    this.openUntil = until;
    this.probeStartedAt = null;
  }

  /** Milliseconds until a probe may be sent (0 when closed or half-open). */
  retryInMs(now: number): number {
    return this.tripped ? Math.max(0, this.openUntil - now) : 0;
  }

  /** Give back an unused probe slot (the attempt was never sent, e.g. the caller left). */
  release(): void {
    this.probeStartedAt = null;
  }
}
