/**
 * A fail-fast Redis client for one Lua script (EVALSHA through ioredis `defineCommand`): the
 * plumbing under `RedisRateLimiter` and `RedisHoldStore`.
 *
 * Failure policy: never waits for a reconnect. Redis down, not yet connected or silent →
 * `TollgateError('store.unavailable')` within `timeoutMs`; the caller decides what that means.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { TollgateError } from '../core/errors.js';

/** Where the commands go, and how long one may take. */
export type RedisConnectionOptions = (
  | { url: string }
  /** A shared client; it is not closed by `close()`. Create it with `failFastRedisOptions`. */
  | { redis: Redis }
) & {
  /** Upper bound for one call, connection problems included (default 500 ms). */
  timeoutMs?: number;
};

export type RedisScriptClientOptions = RedisConnectionOptions & {
  /** The script run by `run()`. */
  lua: string;
  /** The name the script is registered under on the client; versioned, so a changed script gets a new name. */
  commandName: string;
  /** The message of the `store.unavailable` error, naming the store for logs. */
  unavailableMessage: string;
};

type ScriptCommand = (numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Promise<unknown>;

/** Client options under which a dead Redis fails a command at once instead of queueing it. */
export function failFastRedisOptions(timeoutMs: number): RedisOptions {
  return {
    enableOfflineQueue: false, // not connected → the command fails now, it does not wait for a reconnect
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false, // a script call resent after a reconnect could apply twice
    commandTimeout: timeoutMs, // a Redis that accepts but never answers still fails in time
    connectTimeout: timeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000), // keep reconnecting in the background
  };
}

export class RedisScriptClient {
  private readonly redis: Redis;
  private readonly ownsClient: boolean;
  private readonly timeoutMs: number;
  private readonly commandName: string;
  private readonly unavailableMessage: string;
  private error: Error | null = null;

  constructor(options: RedisScriptClientOptions) {
    this.timeoutMs = options.timeoutMs ?? 500;
    this.commandName = options.commandName;
    this.unavailableMessage = options.unavailableMessage;
    this.ownsClient = 'url' in options;
    // ioredis's own command timeout stays behind ours (see guard), so a reply that is already in
    // the socket buffer is not thrown away by a timer that fired late.
    this.redis =
      'url' in options
        ? new Redis(options.url, { ...failFastRedisOptions(this.timeoutMs), commandTimeout: this.timeoutMs * 2 })
        : options.redis;
    this.redis.on('error', (error: Error) => {
      this.error = error;
    });
    this.redis.defineCommand(this.commandName, { lua: options.lua });
  }

  /** Options for another script on this client's connection (it stays owned by this client). */
  connection(timeoutMs?: number): RedisConnectionOptions {
    return { redis: this.redis, ...(timeoutMs === undefined ? { timeoutMs: this.timeoutMs } : { timeoutMs }) };
  }

  /** The last connection error, for `/readyz` and logs; ioredis would print unhandled ones to stderr. */
  get lastError(): Error | null {
    return this.error;
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

  /** A real round trip (PING): a connection that is up but hung fails too. */
  async ping(): Promise<void> {
    await this.ready();
    await this.guard(this.redis.ping());
  }

  /** One call of the script, bounded by `timeoutMs`. */
  async run(keys: string[], args: Array<string | number>): Promise<unknown> {
    // Not connected: fail now. Queueing would hang the request and apply the call after we answered.
    if (this.redis.status !== 'ready')
      throw this.unavailable(this.error ?? new Error(`Redis connection is ${this.redis.status}`));
    const command = (this.redis as unknown as Record<string, ScriptCommand>)[this.commandName] as ScriptCommand;
    return this.guard(command.call(this.redis, keys.length, ...keys, ...args));
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }

  /**
   * Bounds any Redis wait by `timeoutMs`, whatever the client's own options, and types the failure.
   * When the timer fires, pending I/O gets one more turn of the event loop (setImmediate runs after
   * the poll phase): on a busy process the timer is often late, and the reply already arrived.
   */
  private async guard<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => setImmediate(() => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`))),
        this.timeoutMs,
      );
    });
    try {
      return await Promise.race([work, deadline]);
    } catch (error) {
      throw isOutage(error) ? this.unavailable(error) : error;
    } finally {
      clearTimeout(timer);
    }
  }

  private unavailable(cause: unknown): TollgateError {
    return new TollgateError('store.unavailable', this.unavailableMessage, {
      cause,
      metadata: { reason: 'redis_unavailable' },
    });
  }
}

// Redis errors that mean "not serving right now" rather than "this script or key is wrong".
const OUTAGE_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|BUSY|TRYAGAIN|NOREPLICAS)\b/;

function isOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return OUTAGE_REPLY.test(error.message);
  return true; // connection refused/closed, timeouts, stream not writeable, retries exhausted
}
