/**
 * Holds shared by every gateway process through Redis: one Lua script per call (EVALSHA through
 * ioredis `defineCommand`), so "check the rules against the live holds, then add mine" is atomic
 * across processes, and so is "remove my hold, add my charge".
 *
 * Unit: Redis keeps µUSD (1000 units) so that its Lua doubles stay exact (see redis-hold-script.ts).
 * Every conversion rounds against the caller — holds and charges up, balances and remaining limits
 * down — so the µUSD check never admits what the exact check would refuse. The cost is at most
 * 1 µUSD per amount of slack on the refusing side.
 *
 * Time is the caller's `now` (like the rate limiter): processes whose clocks disagree by s see each
 * other's holds expire s early or late. Holds are renewed every third of their TTL, so only a skew
 * beyond two thirds of the TTL (minutes) could drop a live hold early.
 *
 * Failure policy: never waits for a reconnect. Redis down, not yet connected or silent →
 * `TollgateError('store.unavailable')` within `timeoutMs`; the credit gate fails paid requests closed.
 */
import { TollgateError } from '../core/errors.js';
import type { Units } from '../core/money.js';
import { RedisScriptClient, type RedisConnectionOptions } from '../store/redis-script-client.js';
import type {
  ChargedAmounts,
  ChargeMarks,
  HoldCheck,
  HoldDecision,
  HoldRef,
  HoldStore,
  OwnedHold,
} from './hold-store.js';
import { HOLD_LUA } from './redis-hold-script.js';

const UNITS_PER_MICRO = 1000n;
/** Lua compares doubles: beyond this many µUSD an amount would no longer be exact. */
const MAX_MICROS = BigInt(Number.MAX_SAFE_INTEGER);

export type RedisHoldStoreOptions = RedisConnectionOptions & {
  /** Every key starts with it (default `tollgate:hold:`); tests use a unique one per run. */
  keyPrefix?: string;
  /** How long an account's keys outlive its last write or mark read (default 24 h; must exceed any hold TTL). */
  retentionMs?: number;
  /** The fleet epoch this process last saw (main.ts: the fleet's), marked on what it writes. */
  epoch?: () => string | null;
  /**
   * The Redis key the fleet keeps its epoch in (`fleetKeys(prefix).epoch`): an admission that finds
   * there anything but the epoch this process last saw decides nothing (Redis lost its data since).
   */
  epochKey?: string;
};

/** Units → µUSD, rounded up (amounts a check adds: rounding errs toward refusing). */
export function ceilMicros(units: Units): bigint {
  return checked(units >= 0n ? (units + UNITS_PER_MICRO - 1n) / UNITS_PER_MICRO : -(-units / UNITS_PER_MICRO));
}

/** Units → µUSD, rounded down (balances and limits a check compares against). */
export function floorMicros(units: Units): bigint {
  return checked(units >= 0n ? units / UNITS_PER_MICRO : -((-units + UNITS_PER_MICRO - 1n) / UNITS_PER_MICRO));
}

function checked(micros: bigint): bigint {
  if (micros > MAX_MICROS || micros < -MAX_MICROS)
    throw new RangeError(`amount of ${micros} µUSD is beyond the hold store's exact range (2^53 µUSD)`);
  return micros;
}

export class RedisHoldStore implements HoldStore {
  private readonly client: RedisScriptClient;
  private readonly prefix: string;
  private readonly retentionMs: number;
  private readonly epoch: () => string | null;
  private readonly epochKey: string | null;

  constructor(options: RedisHoldStoreOptions) {
    this.epoch = options.epoch ?? (() => null);
    this.epochKey = options.epochKey ?? null;
    this.prefix = options.keyPrefix ?? 'tollgate:hold:';
    this.retentionMs = options.retentionMs ?? 24 * 3_600_000;
    this.client = new RedisScriptClient({
      ...options,
      lua: HOLD_LUA,
      commandName: 'tollgateHoldsV7',
      unavailableMessage: 'The credit hold store (Redis) is unavailable',
    });
  }

  /** The last connection error, for logs. */
  get lastError(): Error | null {
    return this.client.lastError;
  }

  /** Resolves once connected; otherwise `store.unavailable` within `timeoutMs` (boot). */
  ready(): Promise<void> {
    return this.client.ready();
  }

  /** The account's Redis keys (public so tests and operators can find them). */
  keys(accountId: string): [exp: string, holds: string, sums: string] {
    const base = `${this.prefix}{${accountId}}`;
    return [`${base}:exp`, `${base}:hold`, `${base}:sum`];
  }

  async marks(accountId: string, keyHash: string | null): Promise<ChargeMarks> {
    const reply = await this.run(accountId, ['marks', 0, this.retentionMs, keyHash ?? '']);
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error('hold script returned bad marks');
    return { account: BigInt(String(reply[0])), key: keyHash === null ? 0n : BigInt(String(reply[1])) };
  }

  async admit(check: HoldCheck, now: number): Promise<HoldDecision> {
    const keys: string[] = this.keys(check.accountId);
    if (this.epochKey !== null) keys.push(this.epochKey);
    const reply = await this.client.run(keys, [
      'admit',
      now,
      this.retentionMs,
      check.id,
      check.keyHash,
      ceilMicros(check.amount).toString(),
      check.paid ? '1' : '0',
      floorMicros(check.balance).toString(),
      check.accountMark.toString(),
      check.keyRemaining === null ? '' : floorMicros(check.keyRemaining).toString(),
      check.keyMark.toString(),
      check.expiresAt,
      this.epoch() ?? '',
      // Rounded down: Redis holds each hold rounded up, so an intact count is never below it.
      floorMicros(check.ownHeld?.account ?? 0n).toString(),
      floorMicros(check.ownHeld?.key ?? 0n).toString(),
    ]);
    if (!Array.isArray(reply) || reply.length !== 4) throw new Error('hold script returned a bad decision');
    if (Number(reply[0]) === 1) return { admitted: true };
    if (Number(reply[1]) === 3)
      throw new TollgateError('store.unavailable', 'The credit hold store (Redis) lost its data: resynchronising', {
        metadata: { reason: 'redis_resyncing' },
      });
    return {
      admitted: false,
      reason: Number(reply[1]) === 2 ? 'key_limit' : 'balance',
      balance: BigInt(String(reply[2])) * UNITS_PER_MICRO,
      held: BigInt(String(reply[3])) * UNITS_PER_MICRO,
    };
  }

  async settle(hold: HoldRef, charged: ChargedAmounts): Promise<void> {
    await this.run(hold.accountId, [
      'settle',
      0,
      this.retentionMs,
      hold.id,
      hold.keyHash,
      ceilMicros(charged.account).toString(),
      ceilMicros(charged.key).toString(),
    ]);
  }

  async release(hold: HoldRef): Promise<void> {
    await this.run(hold.accountId, ['release', 0, this.retentionMs, hold.id]);
  }

  async renew(holds: readonly HoldRef[], expiresAt: number, now: number): Promise<void> {
    const byAccount = new Map<string, string[]>();
    for (const hold of holds) {
      const ids = byAccount.get(hold.accountId) ?? [];
      ids.push(hold.id);
      byAccount.set(hold.accountId, ids);
    }
    // One call per account (its keys share a hash slot); the calls go out together.
    await Promise.all(
      [...byAccount].map(([accountId, ids]) =>
        this.run(accountId, ['renew', now, this.retentionMs, expiresAt, ...ids]),
      ),
    );
  }

  async restore(holds: readonly OwnedHold[], expiresAt: number, now: number): Promise<void> {
    const byAccount = new Map<string, string[]>();
    for (const hold of holds) {
      const args = byAccount.get(hold.accountId) ?? [];
      args.push(hold.id, ceilMicros(hold.amount).toString(), hold.keyHash);
      byAccount.set(hold.accountId, args);
    }
    await Promise.all(
      [...byAccount].map(([accountId, args]) =>
        this.run(accountId, ['restore', now, this.retentionMs, expiresAt, this.epoch() ?? '', ...args]),
      ),
    );
  }

  async held(accountId: string, now: number): Promise<Units> {
    const reply = await this.run(accountId, ['held', now, this.retentionMs]);
    return BigInt(String(reply)) * UNITS_PER_MICRO;
  }

  close(): Promise<void> {
    return this.client.close();
  }

  private run(accountId: string, args: Array<string | number>): Promise<unknown> {
    return this.client.run(this.keys(accountId), args);
  }
}
