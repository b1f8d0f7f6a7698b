/**
 * Free-model rate limits (docs/api.md): per ACCOUNT (every key of it, every gateway process sharing the
 * limiter), 20 requests per sliding minute and 50 per UTC day, or 1000 per day once the account has
 * purchased at least 10 credits in all. The numbers come from `limits.free_models`.
 *
 * Both daily caps use ONE rule name, so the counter is the same: buying credits mid-day raises the
 * cap over today's count instead of starting a new one.
 *
 * When the limiter's store (Redis) is unreachable, `on_store_error` decides: `closed` (default,
 * docs/architecture.md) refuses free requests with 503; `open` lets them through uncounted and logs a warning
 * at most once per `warnEveryMs`.
 */
import { TollgateError } from '../core/errors.js';
import { usdToUnits, type Units } from '../core/money.js';
import type { Logger } from '../observability/logger.js';
import type { CapacityRefusal, RequestCapacity } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';
import { rateLimitHeaders, type RateDecision, type RateLimiter, type RateRule } from './rate-limit.js';

export const FREE_PER_MINUTE = 'free_model_per_minute';
export const FREE_PER_DAY = 'free_model_per_day';

export interface FreeModelLimits {
  readonly per_minute: number;
  readonly per_day: number;
  readonly per_day_with_credits: number;
  /** USD purchased all time from which `per_day_with_credits` applies. */
  readonly credits_threshold: number;
  readonly on_store_error: 'closed' | 'open';
}

/** What the policy needs of an account: who it is and how much it ever bought. */
export interface FreeModelAccount {
  readonly id: string;
  readonly totalPurchased: Units;
}

/** One consumed unit. */
export interface FreeSlot {
  readonly subject: string;
  readonly rules: readonly RateRule[];
  readonly consumedAt: number;
}

export interface FreeModelDailyUsage {
  limit: number;
  used: number;
  remaining: number;
}

export interface FreeModelPolicyOptions {
  limiter: RateLimiter;
  limits: FreeModelLimits;
  now(): number;
  log: Logger;
  /** Where the counters live, for logs and `/readyz`: `memory` (this process) or `redis` (shared). */
  store: 'memory' | 'redis';
  /** A round trip to the store (Redis PING); absent for the in-memory store. */
  ping?(): Promise<void>;
  /** Fail-open warnings are logged at most this often (default 60 s). */
  warnEveryMs?: number;
  /** Called with the refusing rule's name (a metric). */
  onRefused?(limit: string): void;
}

const MINUTE_MS = 60_000;

export class FreeModelPolicy {
  private readonly limits: FreeModelLimits;
  private readonly threshold: Units;
  private lastWarnAt = -Infinity;
  private suppressedWarnings = 0;

  constructor(private readonly options: FreeModelPolicyOptions) {
    this.limits = options.limits;
    this.threshold = usdToUnits(options.limits.credits_threshold);
  }

  get store(): 'memory' | 'redis' {
    return this.options.store;
  }

  get onStoreError(): 'closed' | 'open' {
    return this.limits.on_store_error;
  }

  dailyLimit(account: FreeModelAccount): number {
    return account.totalPurchased >= this.threshold ? this.limits.per_day_with_credits : this.limits.per_day;
  }

  rules(account: FreeModelAccount): RateRule[] {
    return [
      { name: FREE_PER_MINUTE, kind: 'sliding', limit: this.limits.per_minute, windowMs: MINUTE_MS },
      { name: FREE_PER_DAY, kind: 'utc_day', limit: this.dailyLimit(account) },
    ];
  }

  /**
   * Counts one free-model request of the account, or throws: `limits.rate_limited` (429 with the
   * `X-RateLimit-*` headers) when a rule is exhausted; `store.unavailable` (503) when the store is
   * unreachable and the policy fails closed. Returns null when the store failed and the policy is open.
   */
  async admit(account: FreeModelAccount): Promise<FreeSlot | null> {
    const rules = this.rules(account);
    const now = this.options.now();
    let decision: RateDecision;
    try {
      decision = await this.options.limiter.consume(account.id, rules, now);
    } catch (error) {
      this.onUnavailable(error, 'admit');
      return null;
    }
    if (!decision.allowed) {
      this.options.onRefused?.(decision.rule.name);
      throw this.refusal(account, decision);
    }
    return { subject: account.id, rules, consumedAt: now };
  }

  /**
   * One request's free-model slot, taken before its first attempt at a `:free` model is sent — never
   * for a request its paid models serve — as a step of the execute loop's per-attempt claims (beside
   * `inner`, the capacity limits). A refusal (the quota spent, or the store down and the policy
   * closed) skips every free attempt of the request: a paid fallback still serves, and only when
   * nothing else can does the caller get the 429 (or 503). Null when the plan has no free model.
   */
  forRequest(
    plan: readonly PlannedAttempt[],
    account: () => Promise<FreeModelAccount>,
    inner: RequestCapacity | null,
  ): RequestCapacity | null {
    if (!plan.some((p) => p.model.isFree)) return inner;
    return new FreeModelClaims(this, account, inner);
  }

  /** `free_model_daily_requests` of `GET /key`. With the store down: 503 when closed, `used: 0` when open. */
  async daily(account: FreeModelAccount): Promise<FreeModelDailyUsage> {
    const limit = this.dailyLimit(account);
    const rule: RateRule = { name: FREE_PER_DAY, kind: 'utc_day', limit };
    try {
      const [usage] = await this.options.limiter.peek(account.id, [rule], this.options.now());
      const used = usage?.used ?? 0;
      return { limit, used, remaining: Math.max(0, limit - used) };
    } catch (error) {
      this.onUnavailable(error, 'peek');
      return { limit, used: 0, remaining: limit };
    }
  }

  /** For `/readyz`: resolves when the store answers (always, for memory). */
  async ping(): Promise<void> {
    await this.options.ping?.();
  }

  /** One line for the boot log: where counters live and what happens when that store is down. */
  describe(): Record<string, unknown> {
    return {
      store: this.store,
      on_store_error: this.onStoreError,
      per_minute: this.limits.per_minute,
      per_day: this.limits.per_day,
      per_day_with_credits: this.limits.per_day_with_credits,
      credits_threshold: this.limits.credits_threshold,
    };
  }

  private onUnavailable(error: unknown, during: 'admit' | 'peek'): void {
    if (!(error instanceof TollgateError) || error.code !== 'store.unavailable') throw error;
    if (this.limits.on_store_error === 'closed') {
      throw new TollgateError(
        'store.unavailable',
        'Free-model rate limits cannot be checked right now (the rate-limit store is unavailable); retry shortly',
        { cause: error, metadata: { reason: 'redis_unavailable' } },
      );
    }
    // Fail open: one warning per interval, so an outage does not flood the logs at request rate.
    const now = this.options.now();
    if (now - this.lastWarnAt < (this.options.warnEveryMs ?? 60_000)) {
      this.suppressedWarnings++;
      return;
    }
    this.options.log.warn(
      { err: error, during, suppressed: this.suppressedWarnings },
      'free-model rate limits not enforced: the rate-limit store is unavailable and limits.free_models.on_store_error is "open"',
    );
    this.lastWarnAt = now;
    this.suppressedWarnings = 0;
  }

  private refusal(account: FreeModelAccount, decision: RateDecision): TollgateError {
    const headers = rateLimitHeaders(decision);
    const perMinute = decision.rule.name === FREE_PER_MINUTE;
    let message: string;
    if (perMinute) {
      message = `Rate limit exceeded: free-models-per-min. At most ${decision.limit} free-model requests per minute per account; retry in ${headers['Retry-After'] ?? '1'} s.`;
    } else if (account.totalPurchased < this.threshold) {
      message = `Rate limit exceeded: free-models-per-day. Add ${this.limits.credits_threshold} credits to unlock ${this.limits.per_day_with_credits} free model requests per day.`;
    } else {
      message = `Rate limit exceeded: free-models-per-day. At most ${decision.limit} free-model requests per UTC day per account.`;
    }
    return new TollgateError('limits.rate_limited', message, {
      headers,
      metadata: {
        error_type: 'rate_limit_exceeded',
        limit_source: decision.rule.name,
        headers: {
          'X-RateLimit-Limit': headers['X-RateLimit-Limit'],
          'X-RateLimit-Remaining': headers['X-RateLimit-Remaining'],
          'X-RateLimit-Reset': headers['X-RateLimit-Reset'],
        },
      },
    });
  }
}

/** A request's claims: its capacity limits (`inner`), then — once, before its first free attempt — the free-model slot. */
class FreeModelClaims implements RequestCapacity {
  /** Taken (or the policy let it through uncounted): later free attempts of the request count nothing more. */
  private admitted = false;
  /** The slot was refused: every free attempt of the request is skipped with this answer. */
  private refused: CapacityRefusal | null = null;

  constructor(
    private readonly policy: FreeModelPolicy,
    private readonly account: () => Promise<FreeModelAccount>,
    private readonly inner: RequestCapacity | null,
  ) {}

  async acquire(planned: PlannedAttempt, now: number): Promise<CapacityRefusal | null> {
    if (planned.model.isFree && this.refused) return this.refused;
    const refusal = (await this.inner?.acquire(planned, now)) ?? null;
    if (refusal || !planned.model.isFree || this.admitted) return refusal;
    try {
      await this.policy.admit(await this.account());
      this.admitted = true;
      return null;
    } catch (error) {
      this.inner?.withdraw(planned); // not sent: its capacity claim is undone, requests included
      if (!(error instanceof TollgateError)) throw error;
      // Never waited for: the free-model answer is the 429 (or 503) itself, not a pause.
      this.refused = { retryAt: Number.POSITIVE_INFINITY, error };
      return this.refused;
    }
  }

  ended(planned: PlannedAttempt, answered: boolean): void {
    this.inner?.ended(planned, answered);
  }

  withdraw(planned: PlannedAttempt): void {
    this.inner?.withdraw(planned);
  }

  settle(tokens: number): void {
    this.inner?.settle(tokens);
  }
}
