/**
 * Capacity limits per model and per endpoint (docs/api.md, "Capacity limits"): the upstream's quota —
 * requests per minute (`rpm`) and tokens per minute (`tpm`, prompt + completion) — enforced across the
 * fleet with the free-model limits' algorithm and store (a sliding log per subject; Redis when
 * `REDIS_URL` is set), so every process counts every other's requests.
 *
 * Checked before each attempt is sent, not at admission: an endpoint at its quota is skipped for the
 * next one of the plan (no upstream call), and only when every candidate is refused does the caller get
 * 429 with `X-RateLimit-*`, `Retry-After` and `error_type: rate_limit_exceeded`. A `tpm` entry holds
 * the attempt's estimate (prompt estimate + its completion budget, at most the endpoint's context) until the answer's real token count
 * replaces it (`settle`); an attempt that got no answer gives its tokens back, its request still counts.
 *
 * Store unreachable: `limits.capacity.on_store_error` — `open` (default: the provider's own 429 still
 * protects its quota, and a Redis outage must not stop traffic) or `closed` (503).
 * A request whose plan has no capacity limit makes no call at all.
 */
import { isTollgateError, TollgateError } from '../core/errors.js';
import type { Logger } from '../observability/logger.js';
import type { CapacityLimits, CatalogEndpoint, CatalogModel } from '../routing/catalog.js';
import type { CapacityRefusal, RequestCapacity } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';
import {
  rateLimitHeaders,
  type RateDecision,
  type RateLimiter,
  type RateRule,
  type WeightedRule,
} from './rate-limit.js';

const MINUTE_MS = 60_000;

export interface CapacityGovernorOptions {
  limiter: RateLimiter;
  onStoreError: 'open' | 'closed';
  log: Pick<Logger, 'warn'>;
  /** Fail-open warnings at most this often (default 60 s). */
  warnEveryMs?: number;
  /** Called with the refusing limit (a metric). */
  onRefused?(limit: string): void;
}

interface Subject {
  id: string;
  what: string;
  limits: CapacityLimits;
}

/** What one attempt took: units to give back or entries to reconcile. */
interface Claim {
  rpm: Array<{ subject: string; rules: RateRule[]; at: number }>;
  tpm: Array<{ subject: string; rule: WeightedRule; entry: string }>;
}

export class CapacityGovernor {
  private lastWarnAt = -Infinity;

  constructor(private readonly options: CapacityGovernorOptions) {}

  /** The capacity tracker of one request, or null when nothing in its plan has a limit. */
  forRequest(plan: readonly PlannedAttempt[], tokensFor: (planned: PlannedAttempt) => number): RequestCapacity | null {
    if (!plan.some((p) => p.model.limits !== null || p.endpoint.limits !== null)) return null;
    return new RequestClaims(this, tokensFor);
  }

  /** Takes one attempt's capacity on every subject that limits it, all or nothing. */
  async take(
    planned: PlannedAttempt,
    tokens: number,
    now: number,
  ): Promise<{ claim: Claim } | { refusal: CapacityRefusal }> {
    const claim: Claim = { rpm: [], tpm: [] };
    try {
      for (const subject of subjectsOf(planned.model, planned.endpoint)) {
        if (subject.limits.rpm !== null) {
          const rules: RateRule[] = [{ name: 'rpm', kind: 'sliding', limit: subject.limits.rpm, windowMs: MINUTE_MS }];
          const decision = await this.options.limiter.consume(subject.id, rules, now);
          if (!decision.allowed) return this.refuse(claim, subject, decision);
          claim.rpm.push({ subject: subject.id, rules, at: now });
        }
        if (subject.limits.tpm !== null) {
          const rule: WeightedRule = { name: 'tpm', kind: 'sliding', limit: subject.limits.tpm, windowMs: MINUTE_MS };
          const decision = await this.options.limiter.consumeWeighted(subject.id, rule, tokens, now);
          if (!decision.allowed) return this.refuse(claim, subject, decision);
          claim.tpm.push({ subject: subject.id, rule, entry: decision.entry! });
        }
      }
      return { claim };
    } catch (error) {
      if (!isTollgateError(error) || error.code !== 'store.unavailable') throw error;
      this.giveBack(claim, true);
      if (this.options.onStoreError === 'closed') {
        throw new TollgateError(
          'store.unavailable',
          'Capacity limits cannot be checked right now (the rate-limit store is unavailable); retry shortly',
          { cause: error, metadata: { reason: 'redis_unavailable' } },
        );
      }
      this.warnOpen(error, now);
      return { claim: { rpm: [], tpm: [] } };
    }
  }

  /** Sets the tokens of a claim's `tpm` entries (the real count, or 0 for an attempt that got no answer). */
  reconcile(claim: Claim, tokens: number): void {
    for (const t of claim.tpm)
      this.options.limiter.adjustWeighted(t.subject, t.rule, t.entry, tokens).catch(() => undefined);
  }

  /** Undoes what a claim took (the attempt was never sent): its requests and its tokens. */
  giveBack(claim: Claim, requests: boolean): void {
    if (requests)
      for (const r of claim.rpm) this.options.limiter.refund(r.subject, r.rules, r.at).catch(() => undefined);
    this.reconcile(claim, 0);
  }

  private refuse(claim: Claim, subject: Subject, decision: RateDecision): { refusal: CapacityRefusal } {
    this.giveBack(claim, true);
    this.options.onRefused?.(`capacity_${decision.rule.name}`);
    const headers = rateLimitHeaders(decision);
    const error = new TollgateError(
      'limits.rate_limited',
      `Rate limit exceeded: ${subject.what} is at its capacity of ${decision.limit} ${decision.rule.name === 'rpm' ? 'requests' : 'tokens'} per minute; retry in ${headers['Retry-After'] ?? '1'} s.`,
      {
        headers,
        metadata: {
          error_type: 'rate_limit_exceeded',
          limit_source: `capacity_${decision.rule.name}`,
          headers: {
            'X-RateLimit-Limit': headers['X-RateLimit-Limit'],
            'X-RateLimit-Remaining': headers['X-RateLimit-Remaining'],
            'X-RateLimit-Reset': headers['X-RateLimit-Reset'],
          },
        },
      },
    );
    return { refusal: { retryAt: decision.resetAt, error } };
  }

  private warnOpen(error: unknown, now: number): void {
    if (now - this.lastWarnAt < (this.options.warnEveryMs ?? 60_000)) return;
    this.lastWarnAt = now;
    this.options.log.warn(
      { err: error },
      'capacity limits are not enforced: the rate-limit store is unavailable (limits.capacity.on_store_error: open)',
    );
  }
}

function subjectsOf(model: CatalogModel, endpoint: CatalogEndpoint): Subject[] {
  const subjects: Subject[] = [];
  if (model.limits) subjects.push({ id: `cap:model:${model.id}`, what: `model ${model.id}`, limits: model.limits });
  if (endpoint.limits)
    subjects.push({
      id: `cap:endpoint:${model.id}|${endpoint.provider.id}`,
      what: `model ${model.id} at ${endpoint.provider.name}`,
      limits: endpoint.limits,
    });
  return subjects;
}

/** One request's claims, in attempt order; the last answered attempt is the one served. */
class RequestClaims implements RequestCapacity {
  private readonly claims = new Map<PlannedAttempt, Claim>();
  private served: Claim | null = null;

  constructor(
    private readonly governor: CapacityGovernor,
    private readonly tokensFor: (planned: PlannedAttempt) => number,
  ) {}

  async acquire(planned: PlannedAttempt, now: number): Promise<CapacityRefusal | null> {
    const taken = await this.governor.take(planned, this.tokensFor(planned), now);
    if ('refusal' in taken) return taken.refusal;
    this.claims.set(planned, taken.claim);
    return null;
  }

  ended(planned: PlannedAttempt, answered: boolean): void {
    const claim = this.claims.get(planned);
    if (!claim) return;
    this.claims.delete(planned);
    if (answered) this.served = claim;
    else this.governor.giveBack(claim, false);
  }

  withdraw(planned: PlannedAttempt): void {
    const claim = this.claims.get(planned);
    if (!claim) return;
    this.claims.delete(planned);
    this.governor.giveBack(claim, true);
  }

  settle(tokens: number): void {
    if (this.served) this.governor.reconcile(this.served, tokens);
    this.served = null;
  }
}
