/**
 * The rate-limit algorithm on in-process state: exact for one gateway process (the embedded shape).
 * A fleet shares limits through `RedisRateLimiter`, which passes the same contract suite.
 */
import { ExpiringMap } from './expiring-map.js';
import {
  admits,
  assertValidCall,
  assertValidWeighted,
  counterId,
  decide,
  decideWeighted,
  pivotIndex,
  ruleUsage,
  utcDayEnd,
  type RateDecision,
  type RateLimiter,
  type RateRule,
  type RuleReading,
  type RuleUsage,
  type WeightedDecision,
  type WeightedRule,
} from './rate-limit.js';

export interface MemoryRateLimiterOptions {
  /** Counters held at once (one per subject and rule); beyond it the least recently used is dropped. */
  maxCounters?: number;
  sweepEveryMs?: number;
}

/** A sliding rule's ascending timestamps, or a day rule's count. */
type Counter = number[] | number;

/** A weighted sliding log: entries in time order, and their total. */
interface WeightedLog {
  entries: Array<{ at: number; id: string; cost: number }>;
  total: number;
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly counters: ExpiringMap<Counter>;
  private readonly weighted: ExpiringMap<WeightedLog>;
  private sequence = 0;

  constructor(options: MemoryRateLimiterOptions = {}) {
    const limits = { maxEntries: options.maxCounters ?? 100_000, sweepEveryMs: options.sweepEveryMs ?? 60_000 };
    this.counters = new ExpiringMap<Counter>(limits);
    this.weighted = new ExpiringMap<WeightedLog>(limits);
  }

  async consumeWeighted(subject: string, rule: WeightedRule, cost: number, now: number): Promise<WeightedDecision> {
    assertValidWeighted(rule, cost, now);
    const key = counterKey(subject, rule, now);
    const log = this.weighted.get(key, now) ?? { entries: [], total: 0 };
    while (log.entries.length > 0 && log.entries[0]!.at <= now - rule.windowMs) log.total -= log.entries.shift()!.cost;
    let pivot: number | null = null;
    const need = log.total - rule.limit + 1;
    let cumulative = 0;
    for (const entry of log.entries) {
      cumulative += entry.cost;
      if (cumulative >= need) {
        pivot = entry.at;
        break;
      }
    }
    const id = `m${++this.sequence}`;
    const decision = decideWeighted(rule, { used: log.total, pivot }, cost, now, id);
    if (decision.allowed) {
      let at = log.entries.length;
      while (at > 0 && log.entries[at - 1]!.at > now) at--; // calls may arrive slightly out of order
      log.entries.splice(at, 0, { at: now, id, cost });
      log.total += cost;
    }
    if (log.entries.length > 0)
      this.weighted.set(key, log, log.entries[log.entries.length - 1]!.at + rule.windowMs, now);
    return decision;
  }

  async adjustWeighted(subject: string, rule: WeightedRule, entry: string, cost: number): Promise<void> {
    assertValidWeighted(rule, cost, 0);
    // A sliding counter's key has no time in it; expiry does not matter here (an expired log is never read).
    const log = this.weighted.peek(counterKey(subject, rule, 0), 0);
    const found = log?.entries.findIndex((e) => e.id === entry) ?? -1;
    if (!log || found < 0) return;
    log.total += cost - log.entries[found]!.cost;
    if (cost === 0) log.entries.splice(found, 1);
    else log.entries[found]!.cost = cost;
  }

  /** Counters currently held (for tests and a memory gauge). */
  get size(): number {
    return this.counters.size;
  }

  get evictions(): number {
    return this.counters.evictions;
  }

  async consume(subject: string, rules: readonly RateRule[], now: number): Promise<RateDecision> {
    assertValidCall(rules, now);
    const readings = rules.map((rule) => this.read(subject, rule, now));
    if (admits(rules, readings)) for (const rule of rules) this.add(subject, rule, now);
    return decide(rules, readings, now);
  }

  async peek(subject: string, rules: readonly RateRule[], now: number): Promise<RuleUsage[]> {
    assertValidCall(rules, now);
    return rules.map((rule) => ruleUsage(rule, this.read(subject, rule, now), now, false));
  }

  async refund(subject: string, rules: readonly RateRule[], consumedAt: number): Promise<void> {
    assertValidCall(rules, consumedAt);
    for (const rule of rules) {
      const key = counterKey(subject, rule, consumedAt);
      const counter = this.counters.peek(key, consumedAt);
      if (counter === undefined) continue;
      if (typeof counter === 'number') {
        if (counter > 0) this.counters.set(key, counter - 1, utcDayEnd(consumedAt), consumedAt);
        continue;
      }
      const at = firstAbove(counter, consumedAt - 1);
      if (counter[at] === consumedAt) counter.splice(at, 1);
      if (counter.length === 0) this.counters.delete(key);
    }
  }

  async close(): Promise<void> {
    this.counters.clear();
  }

  private read(subject: string, rule: RateRule, now: number): RuleReading {
    const counter = this.counters.peek(counterKey(subject, rule, now), now);
    if (rule.kind === 'utc_day' || counter === undefined || typeof counter === 'number') {
      return { used: typeof counter === 'number' ? counter : 0, pivot: null };
    }
    const first = firstAbove(counter, now - rule.windowMs);
    const used = counter.length - first;
    return { used, pivot: used > 0 ? (counter[first + pivotIndex(used, rule.limit)] ?? null) : null };
  }

  private add(subject: string, rule: RateRule, now: number): void {
    const key = counterKey(subject, rule, now);
    const counter = this.counters.get(key, now);
    if (rule.kind === 'utc_day') {
      this.counters.set(key, (typeof counter === 'number' ? counter : 0) + 1, utcDayEnd(now), now);
      return;
    }
    const log = Array.isArray(counter) ? counter : [];
    log.splice(0, firstAbove(log, now - rule.windowMs)); // entries out of the window are never read again
    // Calls may arrive slightly out of order (awaits interleave); keep the log sorted.
    log.splice(firstAbove(log, now), 0, now);
    const newest = log[log.length - 1] ?? now;
    this.counters.set(key, log, newest + rule.windowMs, now);
  }
}

function counterKey(subject: string, rule: RateRule, now: number): string {
  return `${subject}\n${counterId(rule, now)}`;
}

/** Index of the first element of an ascending array that is > `value` (binary search). */
function firstAbove(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((sorted[mid] as number) > value) high = mid;
    else low = mid + 1;
  }
  return low;
}
