/**
 * The rate-limit algorithm on Redis, shared by every gateway process: one Lua script per call
 * (EVALSHA through ioredis `defineCommand`) checks and consumes all rules of the call atomically.
 *
 * Time is the caller's `now`, not Redis `TIME`. That keeps this limiter and `MemoryRateLimiter` on
 * one contract and lets tests drive time. The cost: processes whose clocks disagree by s seconds
 * see the sliding window shifted by s for each other's entries (a request may free up to s early or
 * late) and may count the first s seconds after midnight into the other day. Hosts run NTP (skew in
 * milliseconds), which is far below the 60 s window; `TIME` inside the script would remove the skew
 * but make the two implementations (and every test) disagree about time.
 *
 * Failure policy: this class never waits for a reconnect. A Redis that is down, not yet connected or
 * silent answers `TollgateError('store.unavailable')` within `timeoutMs`; the caller decides between
 * failing closed (the default in docs/architecture.md) and open.
 *
 * Redis data loss (docs/architecture.md, "Redis outages"): each process keeps what it consumed itself
 * — its entries of every sliding log still in the window, its count of every day counter — and
 * `restore()` puts them back when the fleet sees Redis come back empty — the weighted logs of the
 * capacity limits too, entry by entry. Counts are then short only by
 * what was admitted between Redis's return and the restores (seconds), never by a whole window.
 */
import { randomUUID } from 'node:crypto';
import { RedisScriptClient, type RedisConnectionOptions } from '../store/redis-script-client.js';
import {
  assertValidCall,
  counterId,
  counterTtlMs,
  decide,
  admits,
  ruleUsage,
  type RateDecision,
  type RateLimiter,
  type RateRule,
  type RuleReading,
  type RuleUsage,
  assertValidWeighted,
  decideWeighted,
  type WeightedDecision,
  type WeightedRule,
} from './rate-limit.js';
import { RATE_LIMIT_LUA, WEIGHTED_LUA } from './redis-rate-limit-script.js';

export type RedisRateLimiterOptions = RedisConnectionOptions & {
  /** Every key starts with it (default `tollgate:rl:`); tests use a unique one per run. */
  keyPrefix?: string;
  /** Extra TTL beyond a counter's window, so a peer with a slightly late clock still finds it (default 10 s). */
  skewAllowanceMs?: number;
};

/** One counter's share written by this process: the entries of a sliding log, or a day's count. */
type OwnCounter =
  | { kind: 's'; windowMs: number; ttlMs: number; entries: Map<string, number> }
  | { kind: 'd'; ttlMs: number; expiresAt: number; count: number };

/** This process's entries of one weighted log (capacity limits), for `restore`. */
interface OwnWeighted {
  keys: [string, string];
  windowMs: number;
  ttlMs: number;
  /** entry id → when it was admitted and its current weight (insertion order is time order). */
  entries: Map<string, { at: number; cost: number }>;
}

/** Entries per restore call of a weighted log (the script's arguments stay small). */
const RESTORE_CHUNK = 300;

export class RedisRateLimiter implements RateLimiter {
  private readonly client: RedisScriptClient;
  /** The weighted log's script, on the same connection. */
  private readonly weightedClient: RedisScriptClient;
  private readonly prefix: string;
  private readonly skewAllowanceMs: number;
  /** What this process consumed, by Redis key, for `restore`. */
  private readonly own = new Map<string, OwnCounter>();
  /** What this process admitted into weighted logs, by log key, for `restore`. */
  private readonly ownWeighted = new Map<string, OwnWeighted>();
  private lastSweep = 0;

  constructor(options: RedisRateLimiterOptions) {
    this.prefix = options.keyPrefix ?? 'tollgate:rl:';
    this.skewAllowanceMs = options.skewAllowanceMs ?? 10_000;
    this.client = new RedisScriptClient({
      ...options,
      lua: RATE_LIMIT_LUA,
      commandName: 'tollgateRateLimitV2',
      unavailableMessage: 'The rate-limit store (Redis) is unavailable',
    });
    this.weightedClient = new RedisScriptClient({
      ...this.client.connection(options.timeoutMs),
      lua: WEIGHTED_LUA,
      commandName: 'tollgateWeightedV2',
      unavailableMessage: 'The rate-limit store (Redis) is unavailable',
    });
  }

  /** The last connection error, for `/readyz` and logs. */
  get lastError(): Error | null {
    return this.client.lastError;
  }

  /** Resolves once connected; otherwise `store.unavailable` within `timeoutMs` (boot and `/readyz`). */
  ready(): Promise<void> {
    return this.client.ready();
  }

  /** A real round trip (PING) for `/readyz`: a connection that is up but hung fails too. */
  ping(): Promise<void> {
    return this.client.ping();
  }

  async consume(subject: string, rules: readonly RateRule[], now: number): Promise<RateDecision> {
    assertValidCall(rules, now);
    const member = `${now}:${randomUUID()}`;
    const readings = await this.run('consume', subject, rules, now, member);
    const decision = decide(rules, readings, now);
    if (decision.allowed) this.remember(subject, rules, now, member);
    return decision;
  }

  async peek(subject: string, rules: readonly RateRule[], now: number): Promise<RuleUsage[]> {
    assertValidCall(rules, now);
    const readings = await this.run('peek', subject, rules, now);
    return rules.map((rule, i) => ruleUsage(rule, readings[i] as RuleReading, now, false));
  }

  async refund(subject: string, rules: readonly RateRule[], consumedAt: number): Promise<void> {
    assertValidCall(rules, consumedAt);
    this.forget(subject, rules, consumedAt);
    await this.run('refund', subject, rules, consumedAt);
  }

  /**
   * Puts this process's own entries back into Redis (after it came back without its data). Day counts
   * are added, not merged: call once per new epoch, and retry only the keys it returns (those that failed).
   */
  async restore(now: number, only?: ReadonlySet<string>): Promise<Set<string>> {
    this.sweep(now, true);
    const failed = new Set<string>();
    for (const [key, counter] of this.own) {
      if (only && !only.has(key)) continue;
      const args: Array<string | number> = ['restore', now, '', counter.kind];
      if (counter.kind === 's') {
        args.push(counter.ttlMs);
        for (const [member, at] of counter.entries) args.push(at, member);
      } else args.push(counter.expiresAt - now, counter.count);
      try {
        await this.client.run([key], args);
      } catch {
        failed.add(key);
      }
    }
    for (const [key, log] of this.ownWeighted) {
      if (only && !only.has(key)) continue;
      const entries = [...log.entries];
      try {
        for (let start = 0; start < entries.length; start += RESTORE_CHUNK) {
          const args: Array<string | number> = ['restore', log.ttlMs];
          for (const [id, { at, cost }] of entries.slice(start, start + RESTORE_CHUNK)) args.push(id, at, cost);
          await this.weightedClient.run(log.keys, args);
        }
      } catch {
        failed.add(key);
      }
    }
    return failed;
  }

  async consumeWeighted(subject: string, rule: WeightedRule, cost: number, now: number): Promise<WeightedDecision> {
    assertValidWeighted(rule, cost, now);
    const [log, weights] = this.weightedKeys(subject, rule);
    const entry = `${now}:${randomUUID()}`;
    const reply = await this.weightedClient.run(
      [log, weights],
      ['consume', now, entry, rule.limit, rule.windowMs, counterTtlMs(rule, now, this.skewAllowanceMs), cost],
    );
    if (!Array.isArray(reply) || !Number.isSafeInteger(Number(reply[1])))
      throw new Error('weighted rate-limit script returned a bad reply');
    const pivot: unknown = reply[2];
    const decision = decideWeighted(
      rule,
      { used: Number(reply[1]), pivot: pivot === null || pivot === undefined ? null : Number(pivot) },
      cost,
      now,
      entry,
    );
    if (decision.allowed !== (Number(reply[0]) === 1))
      throw new Error('weighted rate-limit script and rate-limit.ts disagree on admission');
    if (decision.allowed) this.rememberWeighted([log, weights], rule, entry, now, cost);
    return decision;
  }

  async adjustWeighted(subject: string, rule: WeightedRule, entry: string, cost: number): Promise<void> {
    assertValidWeighted(rule, cost, 0);
    const keys = this.weightedKeys(subject, rule);
    const own = this.ownWeighted.get(keys[0])?.entries;
    const mine = own?.get(entry);
    if (mine) {
      if (cost === 0) own!.delete(entry);
      else mine.cost = cost;
    }
    await this.weightedClient.run(keys, ['adjust', entry, cost]);
  }

  private rememberWeighted(keys: [string, string], rule: WeightedRule, entry: string, now: number, cost: number): void {
    this.sweep(now, false);
    let log = this.ownWeighted.get(keys[0]);
    if (!log) {
      log = { keys, windowMs: rule.windowMs, ttlMs: counterTtlMs(rule, now, this.skewAllowanceMs), entries: new Map() };
      this.ownWeighted.set(keys[0], log);
    }
    log.entries.set(entry, { at: now, cost });
  }

  close(): Promise<void> {
    return this.client.close();
  }

  private weightedKeys(subject: string, rule: WeightedRule): [string, string] {
    const base = `${this.prefix}{${subject}}:${rule.name}`;
    return [`${base}:log`, `${base}:w`];
  }

  /** Where a rule's counter lives: public so tests and operators can find it in Redis. */
  key(subject: string, rule: RateRule, now: number): string {
    return `${this.prefix}{${subject}}:${counterId(rule, now)}`;
  }

  private remember(subject: string, rules: readonly RateRule[], now: number, member: string): void {
    this.sweep(now, false);
    for (const rule of rules) {
      const key = this.key(subject, rule, now);
      const ttlMs = counterTtlMs(rule, now, this.skewAllowanceMs);
      let counter = this.own.get(key);
      if (!counter) {
        counter =
          rule.kind === 'sliding'
            ? { kind: 's', windowMs: rule.windowMs, ttlMs, entries: new Map() }
            : { kind: 'd', ttlMs, expiresAt: now + ttlMs, count: 0 };
        this.own.set(key, counter);
      }
      if (counter.kind === 's') {
        counter.entries.set(member, now);
        for (const [m, at] of counter.entries) {
          if (at > now - counter.windowMs) break; // insertion order is time order
          counter.entries.delete(m);
        }
      } else counter.count++;
    }
  }

  private forget(subject: string, rules: readonly RateRule[], consumedAt: number): void {
    for (const rule of rules) {
      const counter = this.own.get(this.key(subject, rule, consumedAt));
      if (counter?.kind === 'd') counter.count = Math.max(0, counter.count - 1);
      else if (counter?.kind === 's') {
        for (const [member, at] of counter.entries) {
          if (at !== consumedAt) continue;
          counter.entries.delete(member);
          break;
        }
      }
    }
  }

  /** Drops counters nobody could count any more (at most once a minute unless forced). */
  private sweep(now: number, force: boolean): void {
    if (!force && now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, counter] of this.own) {
      const live =
        counter.kind === 'd'
          ? counter.expiresAt > now && counter.count > 0
          : [...counter.entries.values()].some((at) => at > now - counter.windowMs);
      if (!live) this.own.delete(key);
    }
    for (const [key, log] of this.ownWeighted) {
      for (const [id, { at }] of log.entries) {
        if (at > now - log.windowMs) break; // insertion order is time order
        log.entries.delete(id);
      }
      if (log.entries.size === 0) this.ownWeighted.delete(key);
    }
  }

  private async run(
    mode: 'consume' | 'peek' | 'refund',
    subject: string,
    rules: readonly RateRule[],
    now: number,
    member = '',
  ): Promise<RuleReading[]> {
    const keys = rules.map((rule) => this.key(subject, rule, now));
    const args: Array<string | number> = [mode, now, member];
    for (const rule of rules) {
      args.push(
        rule.kind === 'sliding' ? 's' : 'd',
        rule.limit,
        rule.kind === 'sliding' ? rule.windowMs : 0,
        counterTtlMs(rule, now, this.skewAllowanceMs),
      );
    }
    const reply = await this.client.run(keys, args);
    if (mode === 'refund') return [];
    const readings = parseReadings(reply, rules.length);
    if (admits(rules, readings) !== (firstOf(reply) === 1))
      throw new Error('rate-limit script and rate-limit.ts disagree on admission');
    return readings;
  }
}

function firstOf(reply: unknown): unknown {
  return Array.isArray(reply) ? reply[0] : undefined;
}

function parseReadings(reply: unknown, count: number): RuleReading[] {
  if (!Array.isArray(reply)) throw new Error('rate-limit script returned a non-array');
  const readings: RuleReading[] = [];
  for (let i = 0; i < count; i++) {
    const used = Number(reply[1 + 2 * i]);
    const pivot: unknown = reply[2 + 2 * i];
    if (!Number.isSafeInteger(used)) throw new Error('rate-limit script returned a bad count');
    readings.push({ used, pivot: pivot === null || pivot === undefined ? null : Number(pivot) });
  }
  return readings;
}
