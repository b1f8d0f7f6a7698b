/**
 * Admission by credits (docs/api.md): paid models need a positive balance, every model a non-negative
 * one, and the key's limit must not be exhausted. Balances and key usage come from short-lived
 * snapshots (no store round trip per request); the hold store adds what a snapshot cannot know —
 * requests in flight (holds) and charges settled since it was read — and applies the rules to the
 * total atomically (see hold-store.ts). With `RedisHoldStore` that total spans every process.
 *
 * Failure policy (docs/architecture.md, "Redis outages"): when the hold store is shared (Redis) and
 * cannot be trusted — unreachable, or inside the resync window after it came back without its data —
 * each process admits paid requests from its *share*: per account (and per limited key), 1/N of the
 * balance read once the other processes' reports are in, less every process's holds (which only Redis
 * knew: each process reports its own through the database as the outage starts — outage-reports.ts), N
 * being the live processes last counted by the fleet, plus what it holds itself; its holds and charges
 * since count against it. The gate keeps its own record of its holds and charges (a `MemoryHoldStore`)
 * in every mode for that purpose, and re-registers its holds in Redis when Redis returns (`restore`).
 * So the fleet together never holds more than the balance had at the outage's start (plus less than
 * one hold per process), when every process reported in time. `onHoldStoreError: 'closed'` refuses
 * paid requests instead (503), as does a process that has never reached Redis (it cannot know its share). A free request holds nothing: it is checked
 * against the snapshot alone, and the free-model limit (`limits.free_models.on_store_error`) decides.
 * Without a snapshot (database down and nothing cached) everything fails closed.
 */
import { randomBytes } from 'node:crypto';
import { TollgateError, isTollgateError } from '../core/errors.js';
import { ALL_IDS, type ChangeBus } from '../core/change-bus.js';
import { LiveList, type LiveNode } from '../core/live-list.js';
import { fleetShare, type FleetView } from '../core/fleet.js';
import { TtlCache } from '../core/ttl-cache.js';
import { unitsToUsd, type Units } from '../core/money.js';
import {
  byokUsageOf,
  type AccountRecord,
  type GenerationRecord,
  type KeyRecord,
  type KeyUsage,
  type Store,
} from '../store/types.js';
import {
  decideHold,
  type ChargeMark,
  type HoldCheck,
  type HoldDecision,
  type HoldRef,
  type HoldStore,
} from './hold-store.js';
import { limitedUsage, windowName } from './key-view.js';
import { MemoryHoldStore } from './memory-hold-store.js';
import { OutageReports } from './outage-reports.js';
import { usagePeriods, type UsagePeriods } from '../core/usage-window.js';

/**
 * A snapshot plus the shared store's charge mark read just before it (null: it did not answer, or was
 * not trusted). Shares are taken from reads of their own (`decideByShare`).
 */
interface AccountSnapshot {
  account: AccountRecord | null;
  mark: ChargeMark | null;
}

interface KeySnapshot {
  periods: UsagePeriods;
  usage: KeyUsage;
  mark: ChargeMark | null;
}

/** The admission ran into the start (or end) of an outage: it is decided again. */
class OutageMoved extends Error {}

/** This process's share of an account's balance or a key's remaining limit, frozen for one outage. */
interface Share {
  amount: Units;
  /** The process's own charge mark when the share was taken: its charges since then count against it. */
  mark: ChargeMark;
}

export interface Hold extends HoldRef {
  amount: Units;
  /** The key's limit counts BYOK usage too (`include_byok_in_limit`). */
  countsByok: boolean;
  /** `done` once settled or released (both are idempotent); `deferred` while its journaled charge waits for the store. */
  state: 'held' | 'done' | 'deferred';
  /** Its place in the gate's list of live holds while it is there (the gate's own bookkeeping). */
  live: LiveNode<Hold> | null;
}

export interface CreditGateOptions {
  store: Store;
  bus: ChangeBus;
  now: () => number;
  /** Life of the balance and key-usage snapshots. */
  ttlMs: number;
  /** Where holds live: in this process by default, Redis when processes share credit. */
  holds?: HoldStore;
  /** A hold lapses this long after its last renewal (renewed every third of it while the request runs). Default 10 s. */
  holdTtlMs?: number;
  /**
   * Hold-store failures after admission (settle, release, renew, restore): the request goes on, the
   * hold expires; and a report of this process's holds at an outage's start that did not reach the database.
   */
  onHoldError?: (error: unknown, operation: 'settle' | 'release' | 'renew' | 'restore' | 'report') => void;
  /** The processes sharing `holds` (Redis). Absent: the holds are this process's own and always trusted. */
  fleet?: FleetView;
  /** Paid requests while the shared hold store cannot be trusted: from this process's share (default) or refused. */
  onHoldStoreError?: 'share' | 'closed';
  /** How long the first shares of an outage wait for the other processes' reports of their holds (default 3 s). */
  reportWaitMs?: number;
}

const DEFAULT_HOLD_TTL_MS = 10_000;
/**
 * How long a hold whose charge waits in a process's journal outlives that process (`keepForJournal`):
 * a day, the hold store's retention. A process that never comes back leaves its hold counted that long.
 */
export const RECOVERY_HOLD_MS = 24 * 3_600_000;

function isUnavailable(error: unknown): boolean {
  return isTollgateError(error) && error.code === 'store.unavailable';
}

export class CreditGate {
  private readonly accounts: TtlCache<AccountSnapshot>;
  private readonly keys: TtlCache<KeySnapshot>;
  private readonly holds: HoldStore;
  private readonly holdTtlMs: number;
  /**
   * Holds of requests still running in this process: renewed so they outlive a long stream. A list,
   * not a Set: one entry comes and goes per request (core/live-list.ts says why that matters).
   */
  private readonly live = new LiveList<Hold>();
  private readonly renewTimer: NodeJS.Timeout;
  private readonly idPrefix = randomBytes(6).toString('hex');
  private sequence = 0;
  /** This process's own holds and charges, when `holds` is shared: what its share is counted from. */
  private readonly own: MemoryHoldStore | null;
  private readonly fleet: FleetView | null;
  /** Whether the last admission trusted the shared store; a change starts a new outage (or ends one). */
  private trusting = true;
  private readonly accountShares = new Map<string, Share>();
  private readonly keyShares = new Map<string, Share | null>();
  /** This process's reports of its holds to the others while Redis cannot be trusted (outage-reports.ts). */
  private readonly reports: OutageReports;
  private readonly stopResync: () => void;
  private readonly stopTrustWatch: () => void;

  constructor(private readonly options: CreditGateOptions) {
    this.accounts = new TtlCache(options.ttlMs, 100_000, options.now);
    this.keys = new TtlCache(options.ttlMs, 100_000, options.now);
    this.holds = options.holds ?? new MemoryHoldStore();
    this.holdTtlMs = options.holdTtlMs ?? DEFAULT_HOLD_TTL_MS;
    this.fleet = options.holds && options.fleet ? options.fleet : null;
    this.own = this.fleet ? new MemoryHoldStore() : null;
    this.reports = new OutageReports({
      store: options.store.outageHolds,
      processId: this.idPrefix,
      now: options.now,
      fleetSize: () => this.fleet?.size ?? 1,
      ...(options.reportWaitMs === undefined ? {} : { reportWaitMs: options.reportWaitMs }),
      onReportError: (error) => options.onHoldError?.(error, 'report'),
    });
    options.bus.subscribe((topic, id) => {
      const cache = topic === 'account' ? this.accounts : topic === 'key' ? this.keys : null;
      if (cache && id === ALL_IDS) cache.clear();
      else cache?.invalidate(id);
    });
    this.renewTimer = setInterval(() => this.renew(), Math.max(50, Math.floor(this.holdTtlMs / 3)));
    this.renewTimer.unref();
    this.stopResync = this.fleet?.onResync(() => this.restore()) ?? (() => undefined);
    this.stopTrustWatch =
      this.fleet?.onTrustChange((trusted) => (trusted ? this.endOutage() : this.beginOutage())) ?? (() => undefined);
  }

  /** The account from its snapshot (no mark needed: for readers such as the free-model policy). */
  async account(accountId: string): Promise<AccountRecord> {
    const { account } = await this.accountSnapshot(accountId, false);
    if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    return account;
  }

  /**
   * Checks the §5 credit rules against snapshot + live holds + recent charges and, when they pass,
   * holds `estimate`. `id`: the hold's id, unique per request — the request's generation id, so that a
   * process that restarts after a crash can settle the hold its journaled charge was kept under
   * (`keepForJournal`, `settleRecovered`). Default (a continuation's extra hold): one of this process's own.
   */
  async admit(key: KeyRecord, isPaid: boolean, estimate: Units, id?: string): Promise<Hold> {
    let trusted = this.trustShared();
    for (let retried = false; ; retried = true) {
      try {
        return await this.admitOnce(key, isPaid, estimate, trusted, id ?? `${this.idPrefix}:${++this.sequence}`);
      } catch (error) {
        // The shared store failed just now (and was marked suspect), or an outage began or ended
        // while this admission ran: it is decided again, once, by what holds now.
        const moved = error instanceof OutageMoved;
        const failedNow = trusted && isUnavailable(error) && this.fleet !== null && !this.fleet.trusted;
        if (retried || !(moved || failedNow)) throw moved ? holdStoreUnavailable() : error;
        trusted = this.trustShared();
      }
    }
  }

  private async admitOnce(
    key: KeyRecord,
    isPaid: boolean,
    estimate: Units,
    trusted: boolean,
    id: string,
  ): Promise<Hold> {
    const epoch = this.reports.epoch;
    const needMark = isPaid && trusted;
    const [account, usage] = await Promise.all([
      this.accountSnapshot(key.accountId, needMark),
      key.limit === null ? null : this.keySnapshot(key, needMark),
    ]);
    if (!account.account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    const now = this.options.now();
    const hold: Hold = {
      id,
      accountId: key.accountId,
      keyHash: key.hash,
      amount: isPaid ? estimate : 0n,
      countsByok: key.includeByokInLimit,
      state: 'held',
      live: null,
    };
    const check: HoldCheck = {
      id: hold.id,
      accountId: hold.accountId,
      keyHash: hold.keyHash,
      amount: hold.amount,
      paid: isPaid,
      balance: account.account.totalCredits - account.account.totalUsage,
      accountMark: account.mark ?? 0n,
      keyRemaining: usage && key.limit !== null ? key.limit - limitedUsage(key, usage.usage) : null,
      keyMark: usage?.mark ?? 0n,
      expiresAt: now + this.holdTtlMs,
      // What this process holds there by its own count: Redis holding less lost its data (FLUSHALL).
      ...(trusted && this.own ? { ownHeld: this.own.heldNow(key.accountId, key.hash, now) } : {}),
    };
    const decision = trusted
      ? await this.decide(check, account.mark !== null && (usage === null || usage.mark !== null), now)
      : await this.decideByShare(check, key, now);
    if (trusted && decision.admitted && this.reports.epoch !== epoch) {
      // An outage began (or began and ended) while Redis admitted this: the report this process made
      // for it misses the hold, so it is taken back and decided again by what holds now — awaited: the
      // second decision adds a hold under the same id (the generation id), which this must not remove.
      if (hold.amount > 0n) await this.holds.release(check).catch(() => undefined);
      throw new OutageMoved();
    }
    if (!decision.admitted) throw refusal(decision, key, isPaid);
    if (hold.amount > 0n) {
      hold.live = this.live.add(hold);
      if (trusted) this.own?.add(hold, check.expiresAt);
      // Admitted by the share while Redis may still answer the others (this process alone cut off, or
      // the outage just ending): put the hold there too, so their admissions count it as soon as possible.
      else this.holds.restore([hold], check.expiresAt, now).catch(() => undefined);
    } else hold.state = 'done';
    return hold;
  }

  private async decideAgain(check: HoldCheck, now: number): Promise<HoldDecision> {
    const mine = [...this.live].filter((h) => h.accountId === check.accountId && h.state !== 'done');
    await this.holds.restore(mine, now + this.holdTtlMs, now).catch(() => undefined);
    return this.decide(check, true, now, true);
  }

  private async decide(check: HoldCheck, marksKnown: boolean, now: number, retried = false): Promise<HoldDecision> {
    // Only a free request gets here without marks (a paid one reloads its snapshots or fails).
    if (!marksKnown) return snapshotOnly(check);
    try {
      return await this.holds.admit(check, now);
    } catch (error) {
      if (isUnavailable(error)) this.fleet?.suspect();
      // Redis lost its data on a live connection: the fleet looks at its epoch now (a new one starts the
      // resync window), so `admit` decides this request again from the share instead of an empty Redis.
      if (isTollgateError(error) && error.metadata?.reason === 'redis_resyncing') {
        await this.fleet?.checkNow?.();
        // No new epoch: Redis did not lose everything, only some of this process's holds (a renewal
        // that failed past their TTL). They are put back, and the request is decided once more.
        if (this.fleet?.trusted && !retried) return this.decideAgain(check, now);
      }
      if (check.paid || !isUnavailable(error)) {
        // A timed-out call may still have added the hold: take it back, or let it expire.
        if (check.amount > 0n) this.holds.release(check).catch(() => undefined);
        throw error;
      }
      return snapshotOnly(check);
    }
  }

  /**
   * The shared store is not trusted: a paid request is admitted from this process's share of the
   * balance (and key limit), taken once per outage after the other processes' reports are in, counting
   * this process's own holds and charges since (see the header).
   */
  private async decideByShare(check: HoldCheck, key: KeyRecord, now: number): Promise<HoldDecision> {
    if (!check.paid) return snapshotOnly(check);
    const fleet = this.fleet!;
    if (this.options.onHoldStoreError === 'closed' || !fleet.seen) throw holdStoreUnavailable();
    if (!this.accountShares.has(check.accountId) || !this.keyShares.has(check.keyHash)) {
      this.beginOutage();
      const epoch = this.reports.epoch;
      const others = await this.reports.othersHeld(check.accountId, check.keyHash);
      // The balance and key usage are read again once every report is in (the admission's snapshot may
      // be older): a hold that left its process before the report was charged before it, so they have
      // it. This process's marks first: its charges from then on count against the share.
      const marks = this.own!.marksNow(check.accountId, key.limit === null ? null : key.hash);
      const [account, usage] = await Promise.all([
        this.options.store.getAccount(check.accountId),
        key.limit === null ? null : this.options.store.getKeyUsage([key.hash], usagePeriods(this.options.now())),
      ]);
      if (this.reports.epoch !== epoch) throw new OutageMoved();
      if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
      now = this.options.now();
      // What is left once every process's holds at the outage's start are counted out, split N ways;
      // plus what this process holds now, which its own record counts against the share.
      const own = this.own!.heldNow(check.accountId, check.keyHash, now);
      const share = (left: Units, ownHeld: Units, othersHeld: Units | undefined) =>
        ownHeld + fleetShare(left - ownHeld - (othersHeld ?? 0n), fleet.size);
      if (!this.accountShares.has(check.accountId))
        this.accountShares.set(check.accountId, {
          amount: share(account.totalCredits - account.totalUsage, own.account, others.get(`a:${check.accountId}`)),
          mark: marks.account,
        });
      const keyUsage = usage?.get(key.hash);
      if (!this.keyShares.has(check.keyHash))
        this.keyShares.set(
          check.keyHash,
          key.limit === null || !keyUsage
            ? null
            : {
                amount: share(key.limit - limitedUsage(key, keyUsage), own.key, others.get(`k:${check.keyHash}`)),
                mark: marks.key,
              },
        );
    }
    const accountShare = this.accountShares.get(check.accountId)!;
    const keyShare = this.keyShares.get(check.keyHash) ?? null;
    // MemoryHoldStore.admit runs synchronously up to its answer: the check and the new hold are one step.
    return this.own!.admit(
      {
        id: check.id,
        accountId: check.accountId,
        keyHash: check.keyHash,
        amount: check.amount,
        paid: check.paid,
        balance: accountShare.amount,
        accountMark: accountShare.mark,
        keyRemaining: keyShare?.amount ?? null,
        keyMark: keyShare?.mark ?? 0n,
        expiresAt: check.expiresAt,
      },
      now,
    );
  }

  /**
   * Redis stopped being trusted: shares and snapshots of before are of no use now, and this process's
   * holds go to the database for the others' shares.
   */
  private beginOutage(): void {
    if (this.reports.active) return;
    this.trustShared();
    this.reports.begin(this.live);
  }

  /** Redis is trusted again (the shares go; this process's report stops counting as this outage's). */
  private endOutage(): void {
    if (!this.reports.active) return;
    this.reports.end();
    this.trustShared();
  }

  /**
   * Replaces the hold with the committed charge (`null`: nothing was charged), in one atomic step of
   * the hold store, so that no admission anywhere sees neither. Never throws: the charge is already
   * committed; if the hold store is down the hold expires on its own.
   */
  async settle(hold: Hold, charge: GenerationRecord | null): Promise<void> {
    const wasHeld = hold.state === 'held';
    hold.state = 'done';
    this.leave(hold);
    const account = charge?.totalCost ?? 0n;
    const byok = charge && hold.countsByok ? byokUsageOf(charge) : 0n;
    if (!wasHeld && account === 0n && byok === 0n) return;
    const charged = { account, key: account + byok };
    await this.own?.settle(hold, charged);
    try {
      await this.holds.settle(hold, charged);
    } catch (error) {
      if (isUnavailable(error)) this.fleet?.suspect();
      // The shared counters miss this charge: snapshots that predate it must come from the store again.
      this.accounts.invalidate(hold.accountId);
      this.keys.invalidate(hold.keyHash);
      this.options.onHoldError?.(error, 'settle');
    }
  }

  /**
   * The request's charge is durable in the charge journal but not in the store yet: the hold stays
   * (and is renewed) so admissions keep counting it, and becomes the charge once the store has it.
   */
  settleLater(hold: Hold, committed: Promise<GenerationRecord | null>): void {
    if (hold.state !== 'held') return;
    this.keepForJournal([hold]);
    hold.state = 'deferred';
    void committed.then(
      (charge) => {
        hold.state = 'held';
        return this.settle(hold, charge);
      },
      () => {
        hold.state = 'held';
        this.release(hold);
      },
    );
  }

  /**
   * The charge of these holds' request is in this process's charge journal but not in the store (a
   * stream's checkpoint, a charge deferred by a store outage): the holds are kept in the hold store
   * until `RECOVERY_HOLD_MS` from now, not just the hold TTL, so that if this process dies, the other
   * processes keep counting them until it restarts and its replay settles them (`settleRecovered`)
   * instead of admitting against credit the replayed charge then takes. Renewals never shorten it.
   * Fire and forget, as renewals are.
   */
  keepForJournal(holds: readonly Hold[]): void {
    const kept = holds.filter((h) => h.state !== 'done' && h.amount > 0n);
    if (kept.length === 0) return;
    const now = this.options.now();
    this.holds
      .renew(kept, now + RECOVERY_HOLD_MS, now)
      .catch((error: unknown) => this.options.onHoldError?.(error, 'renew'));
  }

  /**
   * A charge an earlier process journaled, now committed by this one's replay at boot: the hold that
   * process kept for it (`keepForJournal`, under the generation id) becomes the charge in one step,
   * as `settle` does for a live request; with no such hold left, the charge is still counted for the
   * processes whose snapshots predate it. Never throws.
   */
  async settleRecovered(charge: GenerationRecord): Promise<void> {
    const ref: HoldRef = { id: charge.id, accountId: charge.accountId, keyHash: charge.keyHash };
    try {
      const key = await this.options.store.getKey(charge.keyHash);
      const byok = key?.includeByokInLimit ? byokUsageOf(charge) : 0n;
      await this.holds.settle(ref, { account: charge.totalCost, key: charge.totalCost + byok });
    } catch (error) {
      this.accounts.invalidate(ref.accountId);
      this.keys.invalidate(ref.keyHash);
      this.options.onHoldError?.(error, 'settle');
    }
  }

  /** Drops the hold of a request that charged nothing. Fire and forget: a late release only over-holds. */
  release(hold: Hold): void {
    if (hold.state !== 'held') return;
    hold.state = 'done';
    this.leave(hold);
    void this.own?.release(hold);
    this.holds.release(hold).catch((error: unknown) => this.options.onHoldError?.(error, 'release'));
  }

  /** Sum of the account's live holds, every process included when the store is shared. */
  held(accountId: string): Promise<Units> {
    return this.holds.held(accountId, this.options.now());
  }

  private leave(hold: Hold): void {
    if (hold.live === null) return;
    this.live.remove(hold.live);
    hold.live = null;
  }

  /** Stops the timers; resolves once this process's outage report, if it made one, is withdrawn. */
  close(): Promise<void> {
    clearInterval(this.renewTimer);
    this.stopResync();
    this.stopTrustWatch();
    // Its holds end with it: the others stop counting them.
    return this.reports.close();
  }

  private renew(): void {
    // While Redis is trusted, the own record only needs the holds: its charge counters restart (each outage takes fresh marks).
    if (this.trusting && this.fleet?.trusted) this.own?.forgetIdle();
    if (this.live.size === 0) return;
    const now = this.options.now();
    const live = [...this.live];
    void this.own?.renew(live, now + this.holdTtlMs, now);
    this.holds
      .renew(live, now + this.holdTtlMs, now)
      .catch((error: unknown) => this.options.onHoldError?.(error, 'renew'));
  }

  /** Redis came back (empty, or after this process was cut off): put this process's holds back. */
  private restore(): void {
    if (this.live.size === 0) return;
    const now = this.options.now();
    this.holds
      .restore([...this.live], now + this.holdTtlMs, now)
      .catch((error: unknown) => this.options.onHoldError?.(error, 'restore'));
  }

  /**
   * Whether this admission may rely on the shared store. A change either way starts afresh: snapshots
   * cached before an outage do not know the charges made during it (and the reverse), and each outage
   * takes its shares from fresh snapshots.
   */
  private trustShared(): boolean {
    const trusted = this.fleet?.trusted ?? true;
    if (trusted !== this.trusting) {
      this.trusting = trusted;
      this.accounts.clear();
      this.keys.clear();
      this.accountShares.clear();
      this.keyShares.clear();
    }
    return trusted;
  }

  /** The mark must be read before the store: charges after it are counted, none before it are missed. */
  private async markOrNull(read: () => Promise<ChargeMark>): Promise<ChargeMark | null> {
    if (!this.trusting) return null;
    try {
      return await read();
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      this.fleet?.suspect();
      return null;
    }
  }

  /**
   * A paid request needs a snapshot with a mark. One without (read while the hold store was down) is
   * replaced once the store answers again; while it does not, the probe's 503 goes to the caller and
   * the database is not asked again for every request.
   */
  private async withMark<T extends { mark: ChargeMark | null }>(
    cache: TtlCache<T>,
    id: string,
    load: () => Promise<T>,
    probe: () => Promise<unknown>,
    needMark: boolean,
  ): Promise<T> {
    const snapshot = await cache.get(id, load);
    if (!needMark || snapshot.mark !== null) return snapshot;
    await probe().catch((error: unknown) => {
      if (isUnavailable(error)) this.fleet?.suspect();
      throw error;
    });
    cache.invalidate(id);
    const fresh = await cache.get(id, load);
    if (fresh.mark === null) throw holdStoreUnavailable();
    return fresh;
  }

  private accountSnapshot(accountId: string, needMark: boolean): Promise<AccountSnapshot> {
    const load = async (): Promise<AccountSnapshot> => {
      const mark = await this.markOrNull(async () => (await this.holds.marks(accountId, null)).account);
      return { account: await this.options.store.getAccount(accountId), mark };
    };
    return this.withMark(this.accounts, accountId, load, () => this.holds.marks(accountId, null), needMark);
  }

  private async keySnapshot(key: KeyRecord, needMark: boolean): Promise<KeySnapshot> {
    const periods = usagePeriods(this.options.now());
    const load = async (): Promise<KeySnapshot> => {
      const mark = await this.markOrNull(async () => (await this.holds.marks(key.accountId, key.hash)).key);
      const usage = await this.options.store.getKeyUsage([key.hash], periods);
      return { periods, usage: usage.get(key.hash)!, mark };
    };
    const probe = () => this.holds.marks(key.accountId, key.hash);
    let snapshot = await this.withMark(this.keys, key.hash, load, probe, needMark);
    if (snapshot.periods.day !== periods.day) {
      this.keys.invalidate(key.hash);
      snapshot = await this.withMark(this.keys, key.hash, load, probe, needMark);
    }
    return snapshot;
  }
}

/** The rules against the snapshot alone: for a free request, which holds nothing. */
function snapshotOnly(check: HoldCheck): HoldDecision {
  return decideHold({
    paid: check.paid,
    balance: check.balance,
    accountRecent: 0n,
    accountHeld: 0n,
    keyRemaining: check.keyRemaining,
    keyRecent: 0n,
    keyHeld: 0n,
  });
}

function refusal(decision: Extract<HoldDecision, { admitted: false }>, key: KeyRecord, isPaid: boolean): TollgateError {
  // Refused for what requests in flight hold (GET /key or /credits still shows some left): said so,
  // or the message contradicts what the caller reads there (outside check).
  const held = decision.held > 0n ? unitsToUsd(decision.held) : null;
  if (decision.reason === 'key_limit') {
    const why = held === null ? '' : `: requests in flight hold ${held} USD; retry when they finish`;
    return new TollgateError(
      'billing.key_limit_exceeded',
      `Key limit exceeded (${windowName(key.limitReset)} limit)${why}`,
      {
        metadata: { limit: unitsToUsd(key.limit!), limit_reset: key.limitReset },
      },
    );
  }
  const balance = `the account balance is ${unitsToUsd(decision.balance)} USD`;
  const detail =
    held !== null && decision.balance > 0n
      ? `${balance} and requests in flight hold ${held} USD; paid models need a positive balance beyond what is held. Retry when they finish, or add credits.`
      : `${balance}${isPaid ? '; paid models need a positive balance' : ''}. Add credits and retry.`;
  return new TollgateError('billing.insufficient_credits', `Insufficient credits: ${detail}`, {
    metadata: { balance: unitsToUsd(decision.balance), in_flight: unitsToUsd(decision.held) },
  });
}

/** A paid request refused because the shared hold store (Redis) cannot be relied on (503, `metadata.reason`). */
function holdStoreUnavailable(): TollgateError {
  return new TollgateError('store.unavailable', 'The credit hold store is unavailable', {
    metadata: { reason: 'redis_unavailable' },
  });
}
