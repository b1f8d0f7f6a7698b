/**
 * The grace exposure shared by a fleet through Redis (billing/grace-exposure.ts): one hash per
 * account, `<prefix>{<account>}:grace` — field `a` the account's total, `k:<key hash>` each limited
 * key's — checked and increased by one Lua call, so concurrent admissions on any process never pass
 * the bound together. Amounts are µUSD, as in the hold store (redis-hold-store.ts): the request's
 * amount rounded up, the room, cap and key room rounded down, so rounding only ever refuses.
 *
 * A Redis that comes back without its data (a new epoch: restart without persistence, failover to an
 * empty replica) would hand every account a fresh cap. So each process remembers what it admitted for
 * as long as the shared count would live, puts it back when the fleet sees the new epoch, and admits
 * nothing under grace while the fleet does not trust Redis (the resync window in which every live
 * process re-registers its own, and a lost connection until the next heartbeat): the fleet's count is
 * whole again before anyone reads it.
 */
import type { FleetView } from '../core/fleet.js';
import { TollgateError } from '../core/errors.js';
import { UNITS_PER_USD } from '../core/money.js';
import type { GraceDecision, GraceExposure, GraceRequest } from './grace-exposure.js';
import { ceilMicros, floorMicros } from './redis-hold-store.js';
import { RedisScriptClient, type RedisConnectionOptions } from '../store/redis-script-client.js';

/**
 * ARGV: 1 amount, 2 paid (1/0), 3 room, 4 cap, 5 key field, 6 key room ('' = no limit), 7 ttl ms. → 0
 * admitted, 1 not covered, 2 exposure. Every call renews the hash's life, a refusal too: only a process
 * still within its own grace asks, so the count lives while any process of the fleet may still admit
 * (one that saw the outage later than the others included), and lapses `ttl` after the last asked.
 */
const GRACE_LUA = `
local h = KEYS[1]
local amount, room, cap = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local used = tonumber(redis.call('HGET', h, 'a') or '0')
local decision = 0
if room - used - amount < 0 or (ARGV[2] == '1' and room - used <= 0) then decision = 1
elseif used + amount > cap then decision = 2
elseif ARGV[6] ~= '' and tonumber(ARGV[6]) - tonumber(redis.call('HGET', h, ARGV[5]) or '0') - amount < 0 then decision = 1
else
  redis.call('HINCRBY', h, 'a', ARGV[1])
  if ARGV[6] ~= '' then redis.call('HINCRBY', h, ARGV[5], ARGV[1]) end
end
if decision == 0 or redis.call('EXISTS', h) == 1 then redis.call('PEXPIRE', h, ARGV[7]) end
return decision
`;

/**
 * Puts one process's admissions back into a Redis that lost its data. KEYS[1] the account's hash;
 * ARGV: 1 ttl ms, then field, amount pairs (µUSD). Adds them (other processes add theirs) and keeps
 * the longer of the hash's remaining life and `ttl`.
 */
const GRACE_RESTORE_LUA = `
local h = KEYS[1]
for i = 2, #ARGV, 2 do redis.call('HINCRBY', h, ARGV[i], ARGV[i + 1]) end
if redis.call('PTTL', h) < tonumber(ARGV[1]) then redis.call('PEXPIRE', h, ARGV[1]) end
return 1
`;

/** What this process admitted for one account (µUSD), and until when the shared count would live. */
interface OwnAdmissions {
  total: bigint;
  keys: Map<string, bigint>;
  until: number;
}

const DECISIONS: GraceDecision[] = ['admitted', 'grace_not_covered', 'grace_exposure'];

export type RedisGraceExposureOptions = RedisConnectionOptions & {
  /** Every key starts with it (main.ts: `limits.redis_prefix` + `grace:`). */
  keyPrefix: string;
  /** The fleet sharing this Redis (main.ts): when to trust the count, and when Redis lost its data. */
  fleet?: FleetView;
  /** Local clock for how long this process remembers its admissions (default Date.now). */
  now?: () => number;
  /** A restore after a new epoch failed (for logs). */
  onRestoreError?: (error: unknown) => void;
};

export class RedisGraceExposure implements GraceExposure {
  private readonly client: RedisScriptClient;
  private readonly restorer: RedisScriptClient;
  private readonly now: () => number;
  /** This process's admissions per account, kept while the shared count would live (for a new epoch). */
  private readonly own = new Map<string, OwnAdmissions>();
  private lastSweep = 0;
  private readonly stopResync: () => void;

  constructor(private readonly options: RedisGraceExposureOptions) {
    this.now = options.now ?? Date.now;
    this.client = new RedisScriptClient({
      ...options,
      lua: GRACE_LUA,
      commandName: 'tollgateGraceV1',
      unavailableMessage: 'The grace exposure store (Redis) is unavailable',
    });
    this.restorer = new RedisScriptClient({
      ...this.client.connection(),
      lua: GRACE_RESTORE_LUA,
      commandName: 'tollgateGraceRestoreV1',
      unavailableMessage: 'The grace exposure store (Redis) is unavailable',
    });
    this.stopResync =
      options.fleet?.onResync((reason) => {
        // A reconnect kept Redis's data: what was admitted is there (adding it again would count it twice).
        if (reason === 'epoch') void this.restore();
      }) ?? (() => undefined);
  }

  /** The account's hash (public so tests can find it). */
  key(accountId: string): string {
    return `${this.options.keyPrefix}{${accountId}}:grace`;
  }

  async reserve(request: GraceRequest): Promise<GraceDecision> {
    if (this.options.fleet && !this.options.fleet.trusted)
      throw new TollgateError(
        'store.unavailable',
        "The grace exposure store (Redis) is resynchronising: its count may miss other processes' admissions",
        { metadata: { reason: 'redis_resyncing' } },
      );
    // Past the cap plus this request a room decides nothing (what was admitted never exceeds the cap),
    // so a balance of billions stays within the doubles' exact range.
    const enough = request.maxExposure + request.amount + UNITS_PER_USD;
    const room = request.room < enough ? request.room : enough;
    const keyRoom = request.keyRoom === null || request.keyRoom < enough ? request.keyRoom : enough;
    const reply = await this.client.run(
      [this.key(request.accountId)],
      [
        ceilMicros(request.amount).toString(),
        request.paid ? '1' : '0',
        floorMicros(room).toString(),
        floorMicros(request.maxExposure).toString(),
        `k:${request.keyHash}`,
        keyRoom === null ? '' : floorMicros(keyRoom).toString(),
        Math.max(1, Math.ceil(request.ttlMs)),
      ],
    );
    const decision = DECISIONS[Number(reply)];
    if (decision === undefined) throw new Error('grace script returned a bad decision');
    this.remember(request, decision);
    return decision;
  }

  ended(): void {
    // The fleet's counters lapse `ttlMs` after the last grace request: another process may still be in its outage.
  }

  /** This process's own admissions still within their count's life, per account (µUSD; for tests and restore). */
  admissions(): Map<string, { total: bigint; keys: Map<string, bigint> }> {
    this.sweep(true);
    return new Map([...this.own].map(([account, own]) => [account, { total: own.total, keys: new Map(own.keys) }]));
  }

  /**
   * Puts this process's admissions back after Redis lost its data, each account's count living as long
   * as this process's last request renewed it. Retried while the resync window lasts (the connection
   * may still be coming back); what cannot be restored is logged, and those admissions are lost from the
   * fleet's count.
   */
  async restore(): Promise<void> {
    this.sweep(true);
    let pending = [...this.own];
    for (let attempt = 0; attempt < 10 && pending.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      const failed: typeof pending = [];
      let lastError: unknown;
      await Promise.all(
        pending.map(async (entry) => {
          const [accountId, own] = entry;
          const ttl = own.until - this.now();
          if (ttl <= 0 || own.total === 0n) return;
          const pairs = [['a', own.total] as const, ...own.keys].flatMap(([field, amount]) => [
            field,
            amount.toString(),
          ]);
          try {
            await this.restorer.run([this.key(accountId)], [ttl, ...pairs]);
          } catch (error) {
            lastError = error;
            failed.push(entry);
          }
        }),
      );
      pending = failed;
      if (pending.length > 0 && attempt === 9) this.options.onRestoreError?.(lastError);
    }
  }

  close(): Promise<void> {
    this.stopResync();
    return this.client.close();
  }

  /** Remembers an admission, and renews the account's life as the script did (admitted, or a count that exists). */
  private remember(request: GraceRequest, decision: GraceDecision): void {
    const now = this.now();
    this.sweep(false);
    let own = this.own.get(request.accountId);
    if (own && own.until <= now) {
      this.own.delete(request.accountId);
      own = undefined;
    }
    if (decision !== 'admitted') {
      if (own) own.until = now + request.ttlMs;
      return;
    }
    own ??= { total: 0n, keys: new Map(), until: 0 };
    this.own.set(request.accountId, own);
    const micros = ceilMicros(request.amount);
    own.total += micros;
    if (request.keyRoom !== null) {
      const field = `k:${request.keyHash}`;
      own.keys.set(field, (own.keys.get(field) ?? 0n) + micros);
    }
    own.until = now + request.ttlMs;
  }

  /** Forgets accounts whose count has lapsed: at most once a second unless `force`. */
  private sweep(force: boolean): void {
    const now = this.now();
    if (!force && now - this.lastSweep < 1_000) return;
    this.lastSweep = now;
    for (const [account, own] of this.own) if (own.until <= now) this.own.delete(account);
  }
}
