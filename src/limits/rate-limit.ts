/**
 * The request-count rate-limit algorithm, pure: stores read one `RuleReading` per rule, and every
 * decision is computed here from those readings and the caller's `now`. The memory and Redis
 * limiters differ only in where the counters live; the Redis Lua script mirrors the two store-side
 * pieces (`admits` and `pivotIndex`) and nothing else.
 *
 * Per-minute limits are a sliding LOG (timestamps), not GCRA. Reasons:
 * - the promise is "20 requests in any 60 s": a log enforces exactly that. GCRA smooths capacity
 *   out (after a burst of 20 it frees one slot every 3 s), so it admits ~39 requests in the first
 *   60 s and its "remaining" is not what a caller counting requests expects;
 * - slots free one by one exactly 60 s after each request, so `X-RateLimit-Reset` and
 *   `Retry-After` are exact;
 * - the log holds at most `limit` timestamps per subject (20), so GCRA's O(1) state buys nothing.
 * Per-day limits are a fixed UTC-day counter whose day is part of its identity (`per_day:2026-11-18`):
 * a new day starts at zero by itself, no reset job.
 */

export const DAY_MS = 86_400_000;

export type RateRule =
  | { readonly name: string; readonly kind: 'sliding'; readonly limit: number; readonly windowMs: number }
  | { readonly name: string; readonly kind: 'utc_day'; readonly limit: number };

/** What a store reads for one rule at `now`, before consuming anything. */
export interface RuleReading {
  /** Units counted in the rule's current window (sliding: timestamps > now − windowMs; day: today's counter). */
  readonly used: number;
  /** Sliding rules: the timestamp at `pivotIndex(used, limit)` of the ascending in-window log; otherwise null. */
  readonly pivot: number | null;
}

export interface RuleUsage {
  readonly rule: RateRule;
  readonly limit: number;
  readonly used: number;
  readonly remaining: number;
  /** Epoch ms when `remaining` next goes up (a sliding slot frees, or the UTC day ends); `now` if nothing is counted. */
  readonly resetAt: number;
}

export interface RateDecision {
  readonly allowed: boolean;
  /** The rule that refused (the one freeing latest when several did), or the tightest one when allowed. */
  readonly rule: RateRule;
  readonly limit: number;
  /** Remaining in `rule` after this call (0 when refused). */
  readonly remaining: number;
  readonly resetAt: number;
  /** 0 when allowed; otherwise `resetAt − now` (≥ 1). */
  readonly retryAfterMs: number;
}

/** A sliding rule whose entries carry a weight (tokens per minute): the window's total is what counts. */
export type WeightedRule = Extract<RateRule, { kind: 'sliding' }>;

/** A weighted rule's reading: the window's total, and the timestamp whose expiry brings it under the limit. */
export interface WeightedReading {
  readonly used: number;
  /** Oldest in-window entry whose cumulative weight (from the oldest) reaches `used − limit + 1`; null when empty. */
  readonly pivot: number | null;
}

export interface WeightedDecision extends RateDecision {
  /** The admitted entry, for `adjustWeighted` (null when refused). */
  readonly entry: string | null;
}

/**
 * The same admission rule as the unit log — admitted while the window has room (`used < limit`) — with
 * the call adding `cost` instead of 1, so one request may pass the limit by its own weight, never two.
 */
export function decideWeighted(
  rule: WeightedRule,
  reading: WeightedReading,
  cost: number,
  now: number,
  entry: string,
): WeightedDecision {
  const allowed = reading.used < rule.limit;
  const used = reading.used + (allowed ? cost : 0);
  const resetAt = reading.pivot !== null ? reading.pivot + rule.windowMs : allowed ? now + rule.windowMs : now;
  return {
    allowed,
    rule,
    limit: rule.limit,
    remaining: Math.max(0, rule.limit - used),
    resetAt,
    retryAfterMs: allowed ? 0 : Math.max(1, resetAt - now),
    entry: allowed ? entry : null,
  };
}

/** A weighted call's arguments are checked like the rules of a unit call. */
export function assertValidWeighted(rule: WeightedRule, cost: number, now: number): void {
  assertValidCall([rule], now);
  if (!Number.isSafeInteger(cost) || cost < 0)
    throw new Error(`rate rule ${rule.name}: cost must be a non-negative integer`);
}

export interface RateLimiter {
  /** Checks every rule and consumes one unit from all of them only if all allow (atomic). */
  consume(subject: string, rules: readonly RateRule[], now: number): Promise<RateDecision>;
  /** Current usage per rule, in the order given, consuming nothing. */
  peek(subject: string, rules: readonly RateRule[], now: number): Promise<RuleUsage[]>;
  /**
   * Gives back one unit taken by an ALLOWED `consume(subject, rules, consumedAt)` (for a request the
   * credit check or validation rejected afterwards). Only that call's timestamp and day are touched;
   * a unit whose sliding entry already left the window is simply gone. Never call it for a refusal.
   */
  refund(subject: string, rules: readonly RateRule[], consumedAt: number): Promise<void>;
  /** Checks a weighted sliding rule and, if the window has room, adds an entry of `cost` (atomic). */
  consumeWeighted(subject: string, rule: WeightedRule, cost: number, now: number): Promise<WeightedDecision>;
  /** Sets the cost of an admitted entry (the real usage once known; 0 removes it). An entry gone already is a no-op. */
  adjustWeighted(subject: string, rule: WeightedRule, entry: string, cost: number): Promise<void>;
  close(): Promise<void>;
}

export function utcDayStart(now: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS;
}

export function utcDayEnd(now: number): number {
  return utcDayStart(now) + DAY_MS;
}

/**
 * The counter a rule uses at `now`, relative to its subject. The day is part of a day counter's
 * identity; the limit is not, so raising 50 → 1000 keeps today's count and admits more at once.
 */
export function counterId(rule: RateRule, now: number): string {
  if (rule.kind === 'sliding') return rule.name;
  return `${rule.name}:${new Date(utcDayStart(now)).toISOString().slice(0, 10)}`;
}

/** How long a counter must outlive `now` so nothing lives forever but nothing live is dropped. */
export function counterTtlMs(rule: RateRule, now: number, skewAllowanceMs: number): number {
  return (rule.kind === 'sliding' ? rule.windowMs : utcDayEnd(now) - now) + skewAllowanceMs;
}

/**
 * Index (0-based, ascending log) of the entry whose expiry frees the next slot: with `used ≥ limit`
 * the slot opens once the oldest `used − limit + 1` entries left the window.
 */
export function pivotIndex(used: number, limit: number): number {
  return used >= limit ? used - limit : 0;
}

/** The whole admission rule, mirrored in the Lua script: every rule must have room. */
export function admits(rules: readonly RateRule[], readings: readonly RuleReading[]): boolean {
  return rules.every((rule, i) => (readings[i]?.used ?? Infinity) < rule.limit);
}

export function ruleUsage(rule: RateRule, reading: RuleReading, now: number, consumed: boolean): RuleUsage {
  const used = reading.used + (consumed ? 1 : 0);
  let resetAt: number;
  if (rule.kind === 'utc_day') resetAt = utcDayEnd(now);
  else if (reading.pivot !== null) resetAt = reading.pivot + rule.windowMs;
  else resetAt = consumed ? now + rule.windowMs : now;
  return { rule, limit: rule.limit, used, remaining: Math.max(0, rule.limit - used), resetAt };
}

export function decide(rules: readonly RateRule[], readings: readonly RuleReading[], now: number): RateDecision {
  if (readings.length !== rules.length) throw new Error(`expected ${rules.length} readings, got ${readings.length}`);
  const allowed = admits(rules, readings);
  const usages = rules.map((rule, i) => ruleUsage(rule, readings[i] as RuleReading, now, allowed));
  // Refused: report the refusing rule that frees latest, since retrying any earlier fails again.
  // Allowed: report the rule with the least room left (ties: the one freeing latest).
  const candidates = allowed ? usages : usages.filter((u, i) => (readings[i] as RuleReading).used >= u.limit);
  const chosen = candidates.reduce((best, u) =>
    u.remaining < best.remaining || (u.remaining === best.remaining && u.resetAt > best.resetAt) ? u : best,
  );
  return {
    allowed,
    rule: chosen.rule,
    limit: chosen.limit,
    remaining: chosen.remaining,
    resetAt: chosen.resetAt,
    retryAfterMs: allowed ? 0 : chosen.resetAt - now,
  };
}

const RULE_NAME = /^[a-z0-9_]{1,64}$/;

/**
 * Run by every limiter method: cheap (a few comparisons), and a bad rule set or a fractional `now`
 * is a programming error that must not silently reach a Redis key or score.
 */
export function assertValidCall(rules: readonly RateRule[], now: number): void {
  if (!Number.isSafeInteger(now) || now < 0)
    throw new Error(`now must be epoch milliseconds as an integer, got ${now}`);
  if (rules.length === 0) throw new Error('at least one rate rule is required');
  const names = new Set<string>();
  for (const rule of rules) {
    // The name becomes part of a Redis key: keep it to a safe alphabet.
    if (!RULE_NAME.test(rule.name)) throw new Error(`invalid rate rule name "${rule.name}"`);
    if (names.has(rule.name)) throw new Error(`duplicate rate rule name "${rule.name}"`);
    names.add(rule.name);
    if (!Number.isSafeInteger(rule.limit) || rule.limit < 1)
      throw new Error(`rate rule ${rule.name}: limit must be a positive integer`);
    if (rule.kind === 'sliding' && (!Number.isSafeInteger(rule.windowMs) || rule.windowMs < 1)) {
      throw new Error(`rate rule ${rule.name}: windowMs must be a positive integer`);
    }
  }
}

/** `X-RateLimit-*` for a platform 429 (docs/api.md): epoch ms as a string; `Retry-After` only for sliding rules. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.resetAt),
  };
  if (decision.rule.kind === 'sliding')
    headers['Retry-After'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
  return headers;
}
