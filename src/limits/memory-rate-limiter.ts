/**
 * The rate-limit algorithm on in-process state: exact for one gateway process (the embedded shape).
 * A fleet shares limits through `RedisRateLimiter`, which passes the same contract suite.
 */
import { ExpiringMap } from './expiring-map.js';
import {
  admits,
  assertValidCall,
  counterId,
  decide,
  pivotIndex,
  ruleUsage,
  utcDayEnd,
  type RateDecision,
  type RateLimiter,
  type RateRule,
  type RuleReading,
  type RuleUsage,
} from './rate-limit.js';

export interface MemoryRateLimiterOptions {
  /** Counters held at once (one per subject and rule); beyond it the least recently used is dropped. */
  maxCounters?: number;
  sweepEveryMs?: number;
}

/** A sliding rule's ascending timestamps, or a day rule's count. */
type Counter = number[] | number;

export class MemoryRateLimiter implements RateLimiter {
  private readonly counters: ExpiringMap<Counter>;

  constructor(options: MemoryRateLimiterOptions = {}) {
    this.counters = new ExpiringMap<Counter>({
      maxEntries: options.maxCounters ?? 100_000,
      sweepEveryMs: options.sweepEveryMs ?? 60_000,
    });
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
