/**
 * The grace exposure shared by a fleet through Redis (billing/grace-exposure.ts): one hash per
 * account, `<prefix>{<account>}:grace` — field `a` the account's total, `k:<key hash>` each limited
 * key's — checked and increased by one Lua call, so concurrent admissions on any process never pass
 * the bound together. Amounts are µUSD, as in the hold store (redis-hold-store.ts): the request's
 * amount rounded up, the room, cap and key room rounded down, so rounding only ever refuses.
 *
 * A Redis that comes back without its data (a new epoch: restart without persistence, failover to an
 * empty replica) would hand every account a fresh cap. So each process remembers what it admitted for
 * as long as the shared count lives — past its own last request while another process keeps the count
 * alive (`refresh` asks Redis) — puts it back when the fleet sees the new epoch (once per epoch: a
 * retried restore is recognised by its marker), and admits nothing under grace while the fleet does
 * not trust Redis (the resync window in which every live process re-registers its own, and a lost
 * connection until the next heartbeat) or while its own restore is pending: the fleet's count is whole
 * again before anyone reads it. A restore that fails for good is logged (one that succeeds after the
 * window, from a process that came back late, leaves the others a short spell without its share). Two
 * cases count more than the fleet spent, which only refuses sooner: an epoch key lost while the counts
 * survived (restored twice), and a share remembered a few seconds past its count's end (a new
 * admission then adds to it).
 */
import type { FleetView } from '../core/fleet.js';
import { TollgateError } from '../core/errors.js';
import { UNITS_PER_USD } from '../core/money.js';
import type { GraceDecision, GraceExposure, GraceRequest } from './grace-exposure.js';
import { ceilMicros, floorMicros } from './redis-hold-store.js';
import { RedisScriptClient, type RedisConnectionOptions } from '../store/redis-script-client.js';

/**
 * ARGV: 1 amount, 2 paid (1/0), 3 room, 4 cap, 5 key field, 6 key room ('' = no limit), 7 ttl ms, 8 what
 * this process admitted itself and still remembers, 9 the fleet epoch it last saw ('' = none), 10 '1'
 * when it has just looked and trusts Redis (the count is whole: both checks below are skipped). → 0
 * admitted, 1 not covered, 2 exposure; nothing decided: 3 the count is below this process's own share
 * (Redis lost its data on a live connection, or the count lapsed), 4 the count carries a newer epoch
 * than this process last saw (Redis lost its data and another process noticed first). Field `ep` is
 * the newest epoch (a timestamp) of a process that admitted or restored here. Every call renews the
 * hash's life, a refusal too: only a process still within its own grace asks, so the count lives while
 * any process of the fleet may still admit (one that saw the outage later than the others included),
 * and lapses `ttl` after the last asked.
 */
const GRACE_LUA = `
local h = KEYS[1]
local amount, room, cap = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local used = tonumber(redis.call('HGET', h, 'a') or '0')
if ARGV[10] ~= '1' and ARGV[9] ~= '' and redis.call('EXISTS', h) == 0 then return 5 end
if ARGV[10] ~= '1' then
  local ep = redis.call('HGET', h, 'ep')
  if ARGV[9] ~= '' and ep and tonumber(ep) > tonumber(ARGV[9]) then return 4 end
  if used < tonumber(ARGV[8]) then return 3 end
end
local decision = 0
if room - used - amount < 0 or (ARGV[2] == '1' and room - used <= 0) then decision = 1
elseif used + amount > cap then decision = 2
elseif ARGV[6] ~= '' and tonumber(ARGV[6]) - tonumber(redis.call('HGET', h, ARGV[5]) or '0') - amount < 0 then decision = 1
else
  redis.call('HINCRBY', h, 'a', ARGV[1])
  if ARGV[6] ~= '' then redis.call('HINCRBY', h, ARGV[5], ARGV[1]) end
end
if decision == 0 or redis.call('EXISTS', h) == 1 then
  local ep = redis.call('HGET', h, 'ep')
  if ARGV[9] ~= '' and (not ep or tonumber(ep) < tonumber(ARGV[9])) then redis.call('HSET', h, 'ep', ARGV[9]) end
  redis.call('PEXPIRE', h, ARGV[7])
end
return decision
`;

/**
 * Puts one process's admissions back into a Redis that lost its data. KEYS[1] the account's hash;
 * ARGV: 1 ttl ms, 2 this restore's marker, 3 the epoch it restores into ('' = none), then field,
 * amount pairs (µUSD). Adds them once per marker (a retry whose first call did land adds nothing;
 * other processes add theirs), marks the count with the epoch if newer, and keeps the longer of the
 * hash's remaining life and `ttl`.
 */
const GRACE_RESTORE_LUA = `
local h = KEYS[1]
if redis.call('HSETNX', h, ARGV[2], 1) == 0 then return 0 end
local ep = redis.call('HGET', h, 'ep')
if ARGV[3] ~= '' and (not ep or tonumber(ep) < tonumber(ARGV[3])) then redis.call('HSET', h, 'ep', ARGV[3]) end
for i = 4, #ARGV, 2 do redis.call('HINCRBY', h, ARGV[i], ARGV[i + 1]) end
if redis.call('PTTL', h) < tonumber(ARGV[1]) then redis.call('PEXPIRE', h, ARGV[1]) end
return 1
`;

/** KEYS[1] an account's hash → its remaining life in ms (-2: gone). */
const GRACE_PTTL_LUA = `return redis.call('PTTL', KEYS[1])`;

/** What this process admitted for one account (µUSD), and until when the shared count lives, at least. */
interface OwnAdmissions {
  total: bigint;
  keys: Map<string, bigint>;
  until: number;
  /** The grace duration its requests asked for: a restored count whose life is unknown lives this long. */
  ttlMs: number;
  /** When `refresh` first found the count gone, and in which restore generation (one sighting deletes nothing). */
  goneSince: { at: number; generation: number } | null;
}

/**
 * How long a count must stay gone before a process forgets its share: more than the fleet's heartbeat,
 * so a Redis that lost its data without dropping the connection (FLUSHALL, a failover behind a proxy)
 * is seen as a new epoch — and restored — first.
 */
const GONE_CONFIRM_MS = 2_500;

const DECISIONS: GraceDecision[] = ['admitted', 'grace_not_covered', 'grace_exposure'];
/**
 * The script's answers that decide nothing (see GRACE_LUA): below this process's own share, another
 * epoch, or no count at all. The last is an account's first grace request in this outage — or a Redis
 * emptied on a live connection (FLUSHALL), which also took every epoch mark: a process with no
 * admissions of its own there had nothing to tell the two apart by, and admitted a second allowance
 * until its next heartbeat (outside check). So the fleet looks first, once per fresh count.
 */
const BELOW_OWN_SHARE = 3;
const OTHER_EPOCH = 4;
const NO_COUNT = 5;

/** How often this process asks whether the counts its own requests no longer renew still live. */
const REFRESH_EVERY_MS = 5_000;
const RESTORE_ATTEMPTS = 10;

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
  private readonly ttlReader: RedisScriptClient;
  private readonly now: () => number;
  /** This process's admissions per account, kept while the shared count lives (for a new epoch). */
  private readonly own = new Map<string, OwnAdmissions>();
  private readonly stopResync: () => void;
  private refreshTimer: NodeJS.Timeout | null = null;
  /** Marks each restore (one per epoch seen), so a retry is recognised and an outdated one stops. */
  private readonly processMark = Math.random().toString(36).slice(2, 10);
  private generation = 0;
  private restoring: Promise<void> | null = null;

  constructor(private readonly options: RedisGraceExposureOptions) {
    this.now = options.now ?? Date.now;
    this.client = new RedisScriptClient({
      ...options,
      lua: GRACE_LUA,
      commandName: 'tollgateGraceV3',
      unavailableMessage: 'The grace exposure store (Redis) is unavailable',
    });
    const script = (lua: string, commandName: string) =>
      new RedisScriptClient({
        ...this.client.connection(),
        lua,
        commandName,
        unavailableMessage: 'The grace exposure store (Redis) is unavailable',
      });
    this.restorer = script(GRACE_RESTORE_LUA, 'tollgateGraceRestoreV3');
    this.ttlReader = script(GRACE_PTTL_LUA, 'tollgateGracePttlV1');
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
    const fleet = this.options.fleet;
    if (this.restoring !== null || (fleet && !fleet.trusted)) {
      const resyncing = this.restoring !== null || fleet?.resyncing === true;
      throw new TollgateError(
        'store.unavailable',
        resyncing
          ? "The grace exposure store (Redis) is resynchronising: its count may miss other processes' admissions"
          : 'The grace exposure store (Redis) is unavailable',
        { metadata: { reason: resyncing ? 'redis_resyncing' : 'redis_unavailable' } },
      );
    }
    // Past the cap plus this request a room decides nothing (what was admitted never exceeds the cap),
    // so a balance of billions stays within the doubles' exact range.
    const enough = request.maxExposure + request.amount + UNITS_PER_USD;
    const room = request.room < enough ? request.room : enough;
    const keyRoom = request.keyRoom === null || request.keyRoom < enough ? request.keyRoom : enough;
    const ask = (looked: boolean) =>
      this.client.run(
        [this.key(request.accountId)],
        [
          ceilMicros(request.amount).toString(),
          request.paid ? '1' : '0',
          floorMicros(room).toString(),
          floorMicros(request.maxExposure).toString(),
          `k:${request.keyHash}`,
          keyRoom === null ? '' : floorMicros(keyRoom).toString(),
          Math.max(1, Math.ceil(request.ttlMs)),
          (this.own.get(request.accountId)?.total ?? 0n).toString(),
          fleet?.epoch ?? '',
          looked ? '1' : '0',
        ],
      );
    let reply = await ask(false);
    if (Number(reply) === BELOW_OWN_SHARE || Number(reply) === OTHER_EPOCH || Number(reply) === NO_COUNT) {
      // Redis lost its data on a live connection (FLUSHALL, an eviction, a failover behind a proxy): the
      // fleet looks now, sees the new epoch, and nobody admits until every process's share is back. Or,
      // the fleet still trusting Redis after looking, the count lapsed while this process remembered its
      // share (forgotten now), or an epoch mark is stale: the count is whole, and decides.
      await fleet?.checkNow?.();
      if (this.restoring !== null || (fleet && !fleet.trusted))
        throw new TollgateError(
          'store.unavailable',
          "The grace exposure store (Redis) is resynchronising: its count may miss other processes' admissions",
          { metadata: { reason: 'redis_resyncing' } },
        );
      if (Number(reply) === BELOW_OWN_SHARE) this.own.delete(request.accountId);
      reply = await ask(true);
    }
    const decision = DECISIONS[Number(reply)];
    if (decision === undefined) throw new Error('grace script returned a bad decision');
    this.remember(request, decision);
    return decision;
  }

  ended(): void {
    // The fleet's counters lapse `ttlMs` after the last grace request: another process may still be in its outage.
  }

  /** This process's own admissions it still remembers, per account (µUSD; for tests). */
  admissions(): Map<string, { total: bigint; keys: Map<string, bigint> }> {
    return new Map([...this.own].map(([account, own]) => [account, { total: own.total, keys: new Map(own.keys) }]));
  }

  /**
   * Puts this process's admissions back after Redis lost its data, each account's count living as long
   * as this process knew it to (or, past that, the grace duration: fail-safe). Retried while the
   * connection comes back; a newer epoch's restore replaces it. Until it is done this process admits
   * no grace. What cannot be restored is logged, and those admissions are lost from the fleet's count.
   */
  restore(): Promise<void> {
    const generation = ++this.generation;
    const marker = `r:${this.processMark}:${generation}`;
    const done = this.restoreAll(generation, marker).finally(() => {
      if (this.generation === generation) this.restoring = null;
    });
    this.restoring = done;
    return done;
  }

  private async restoreAll(generation: number, marker: string): Promise<void> {
    let pending = [...this.own];
    let lastError: unknown;
    for (let attempt = 0; attempt < RESTORE_ATTEMPTS && pending.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      if (this.generation !== generation) return; // a newer epoch: its restore takes over
      const failed: typeof pending = [];
      await Promise.all(
        pending.map(async (entry) => {
          const [accountId, own] = entry;
          if (own.total === 0n) return;
          const left = own.until - this.now();
          const ttl = left > 0 ? left : own.ttlMs;
          const pairs = [['a', own.total] as const, ...own.keys].flatMap(([field, amount]) => [
            field,
            amount.toString(),
          ]);
          try {
            await this.restorer.run(
              [this.key(accountId)],
              [Math.max(1, Math.ceil(ttl)), marker, this.options.fleet?.epoch ?? '', ...pairs],
            );
          } catch (error) {
            lastError = error;
            failed.push(entry);
          }
        }),
      );
      pending = failed;
    }
    if (pending.length > 0 && this.generation === generation) this.options.onRestoreError?.(lastError);
  }

  /**
   * For each account whose count this process's requests no longer renew: asks Redis how long the count
   * still lives (another process may keep it alive) and remembers this process's share that long; forgets
   * it once the count is gone. Only while the fleet trusts Redis (a count missing from a Redis that lost
   * its data is not gone: it is about to be restored). Runs every few seconds while anything is remembered.
   */
  async refresh(): Promise<void> {
    const fleet = this.options.fleet;
    if (fleet && !fleet.trusted) return;
    if (this.restoring !== null) return;
    const now = this.now();
    const generation = this.generation;
    await Promise.all(
      [...this.own].map(async ([accountId, own]) => {
        if (own.until > now) return;
        let pttl: number;
        try {
          pttl = Number(await this.ttlReader.run([this.key(accountId)], []));
        } catch {
          return; // asked again next time
        }
        if (this.generation !== generation || (fleet && !fleet.trusted) || this.own.get(accountId) !== own) return;
        const at = this.now();
        if (own.until > at) return; // renewed by a request meanwhile
        if (pttl === -2) {
          // Gone — or Redis lost its data a moment ago and the fleet has not seen the new epoch yet:
          // forgotten only when still gone on a later pass, in the same generation, seconds later.
          if (own.goneSince === null || own.goneSince.generation !== generation) own.goneSince = { at, generation };
          else if (at - own.goneSince.at >= GONE_CONFIRM_MS) this.own.delete(accountId);
          return;
        }
        own.goneSince = null;
        // -1: no expiry (set from outside): kept as long as a grace duration, asked again then.
        own.until = Math.max(own.until, at + (pttl > 0 ? pttl : own.ttlMs));
      }),
    );
    if (this.own.size === 0) this.stopRefreshing();
  }

  close(): Promise<void> {
    this.stopResync();
    this.stopRefreshing();
    this.generation++; // a restore still retrying stops
    return this.client.close();
  }

  private stopRefreshing(): void {
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    this.refreshTimer = null;
  }

  /** Remembers an admission, and renews the account's life as the script did (admitted, or a count that exists). */
  private remember(request: GraceRequest, decision: GraceDecision): void {
    const now = this.now();
    let own = this.own.get(request.accountId);
    if (own) own.goneSince = null;
    if (decision !== 'admitted') {
      if (own) own.until = Math.max(own.until, now + request.ttlMs);
      return;
    }
    if (own === undefined) {
      own = { total: 0n, keys: new Map(), until: 0, ttlMs: request.ttlMs, goneSince: null };
      this.own.set(request.accountId, own);
    }
    const micros = ceilMicros(request.amount);
    own.total += micros;
    if (request.keyRoom !== null) {
      const field = `k:${request.keyHash}`;
      own.keys.set(field, (own.keys.get(field) ?? 0n) + micros);
    }
    own.until = Math.max(own.until, now + request.ttlMs);
    own.ttlMs = Math.max(own.ttlMs, request.ttlMs);
    if (this.refreshTimer === null) {
      this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_EVERY_MS);
      this.refreshTimer.unref();
    }
  }
}
