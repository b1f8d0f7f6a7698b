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
 * failing closed (the default in design.md) and open.
 */
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { TollgateError } from '../core/errors.js';
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
} from './rate-limit.js';
import { RATE_LIMIT_LUA } from './redis-rate-limit-script.js';

const COMMAND = 'tollgateRateLimitV1';

interface ScriptCommands {
  [COMMAND](numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
}

interface CommonOptions {
  /** Every key starts with it (default `tollgate:rl:`); tests use a unique one per run. */
  keyPrefix?: string;
  /** Upper bound for one call, connection problems included (default 500 ms). */
  timeoutMs?: number;
  /** Extra TTL beyond a counter's window, so a peer with a slightly late clock still finds it (default 10 s). */
  skewAllowanceMs?: number;
}

export type RedisRateLimiterOptions =
  | (CommonOptions & { url: string })
  /** A shared client; it is not closed by `close()`. Create it with `failFastRedisOptions`. */
  | (CommonOptions & { redis: Redis });

/** Client options under which a dead Redis fails a command at once instead of queueing it. */
export function failFastRedisOptions(timeoutMs: number): RedisOptions {
  return {
    enableOfflineQueue: false, // not connected → the command fails now, it does not wait for a reconnect
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false, // a consume resent after a reconnect could count twice
    commandTimeout: timeoutMs, // a Redis that accepts but never answers still fails in time
    connectTimeout: timeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000), // keep reconnecting in the background
  };
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly skewAllowanceMs: number;
  /** The last connection error, for `/readyz` and logs; ioredis would print unhandled ones to stderr. */
  lastError: Error | null = null;

  constructor(options: RedisRateLimiterOptions) {
    this.prefix = options.keyPrefix ?? 'tollgate:rl:';
    this.timeoutMs = options.timeoutMs ?? 500;
    this.skewAllowanceMs = options.skewAllowanceMs ?? 10_000;
    this.ownsClient = 'url' in options;
    this.redis = 'url' in options ? new Redis(options.url, failFastRedisOptions(this.timeoutMs)) : options.redis;
    this.redis.on('error', (error: Error) => {
      this.lastError = error;
    });
    this.redis.defineCommand(COMMAND, { lua: RATE_LIMIT_LUA });
  }

  /** Resolves once connected; otherwise `store.unavailable` within `timeoutMs` (boot and `/readyz`). */
  async ready(): Promise<void> {
    if (this.redis.status === 'ready') return;
    let onReady: (() => void) | undefined;
    try {
      await this.guard(
        new Promise<void>((resolve) => {
          onReady = resolve;
          this.redis.once('ready', onReady);
        }),
      );
    } finally {
      if (onReady) this.redis.off('ready', onReady);
    }
  }

  /** A real round trip (PING) for `/readyz`: a connection that is up but hung fails too. */
  async ping(): Promise<void> {
    await this.ready();
    await this.guard(this.redis.ping());
  }

  async consume(subject: string, rules: readonly RateRule[], now: number): Promise<RateDecision> {
    assertValidCall(rules, now);
    const readings = await this.run('consume', subject, rules, now);
    return decide(rules, readings, now);
  }

  async peek(subject: string, rules: readonly RateRule[], now: number): Promise<RuleUsage[]> {
    assertValidCall(rules, now);
    const readings = await this.run('peek', subject, rules, now);
    return rules.map((rule, i) => ruleUsage(rule, readings[i] as RuleReading, now, false));
  }

  async refund(subject: string, rules: readonly RateRule[], consumedAt: number): Promise<void> {
    assertValidCall(rules, consumedAt);
    await this.run('refund', subject, rules, consumedAt);
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }

  /** Where a rule's counter lives: public so tests and operators can find it in Redis. */
  key(subject: string, rule: RateRule, now: number): string {
    return `${this.prefix}{${subject}}:${counterId(rule, now)}`;
  }

  private async run(mode: 'consume' | 'peek' | 'refund', subject: string, rules: readonly RateRule[], now: number): Promise<RuleReading[]> {
    const keys = rules.map((rule) => this.key(subject, rule, now));
    const args: Array<string | number> = [mode, now, `${now}:${randomUUID()}`];
    for (const rule of rules) {
      args.push(rule.kind === 'sliding' ? 's' : 'd', rule.limit, rule.kind === 'sliding' ? rule.windowMs : 0, counterTtlMs(rule, now, this.skewAllowanceMs));
    }
    // Not connected: fail now. Queueing would hang the request and consume later, after we answered.
    if (this.redis.status !== 'ready') throw unavailable(this.lastError ?? new Error(`Redis connection is ${this.redis.status}`));
    const command = (this.redis as unknown as ScriptCommands)[COMMAND](keys.length, ...keys, ...args);
    const reply = await this.guard(command);
    if (mode === 'refund') return [];
    const readings = parseReadings(reply, rules.length);
    if (admits(rules, readings) !== (firstOf(reply) === 1)) throw new Error('rate-limit script and rate-limit.ts disagree on admission');
    return readings;
  }

  /** Bounds any Redis wait by `timeoutMs`, whatever the client's own options, and types the failure. */
  private async guard<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([work, deadline]);
    } catch (error) {
      throw isOutage(error) ? unavailable(error) : error;
    } finally {
      clearTimeout(timer);
    }
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

// Redis errors that mean "not serving right now" rather than "this script or key is wrong".
const OUTAGE_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|BUSY|TRYAGAIN|NOREPLICAS)\b/;

function isOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return OUTAGE_REPLY.test(error.message);
  return true; // connection refused/closed, timeouts, stream not writeable, retries exhausted
}

function unavailable(cause: unknown): TollgateError {
  return new TollgateError('store.unavailable', 'The rate-limit store (Redis) is unavailable', { cause });
}
