/**
 * Admission by credits (docs/api.md): paid models need a positive balance, every model a non-negative
 * one, and the key's limit must not be exhausted. Balances and key usage come from short-lived
 * snapshots (no store round trip per request); the hold store adds what a snapshot cannot know —
 * requests in flight (holds) and charges settled since it was read — and applies the rules to the
 * total atomically (see hold-store.ts). With `RedisHoldStore` that total spans every process.
 *
 * Failure policy (docs/architecture.md): a paid request fails closed (503 `store.unavailable`, nothing
 * forwarded) when the hold store or the database is unreachable. A free request holds nothing, so
 * when only the hold store is down it is checked against the snapshot alone and let through; the
 * free-model rate limit (`limits.free_models.on_store_error`) then decides. Without a snapshot
 * (database down and nothing cached) it fails closed too.
 */
import { randomBytes } from 'node:crypto';
import { TollgateError, isTollgateError } from '../core/errors.js';
import { ALL_IDS, type ChangeBus } from '../core/change-bus.js';
import { TtlCache } from '../core/ttl-cache.js';
import { unitsToUsd, type Units } from '../core/money.js';
import type { AccountRecord, GenerationRecord, KeyRecord, KeyUsage, Store } from '../store/types.js';
import { decideHold, type ChargeMark, type HoldCheck, type HoldDecision, type HoldRef, type HoldStore } from './hold-store.js';
import { limitedUsage, windowName } from './key-view.js';
import { MemoryHoldStore } from './memory-hold-store.js';
import { usagePeriods, type UsagePeriods } from './usage-window.js';

/** A snapshot plus the charge mark read just before it (null: the hold store did not answer then). */
interface AccountSnapshot {
  account: AccountRecord | null;
  mark: ChargeMark | null;
}

interface KeySnapshot {
  periods: UsagePeriods;
  usage: KeyUsage;
  mark: ChargeMark | null;
}

export interface Hold extends HoldRef {
  amount: Units;
  /** The key's limit counts BYOK usage too (`include_byok_in_limit`). */
  countsByok: boolean;
  /** `done` once settled or released (both are idempotent); `deferred` while its journaled charge waits for the store. */
  state: 'held' | 'done' | 'deferred';
}

export interface CreditGateOptions {
  store: Store;
  bus: ChangeBus;
  now: () => number;
  /** Life of the balance and key-usage snapshots. */
  ttlMs: number;
  /** Where holds live: in this process by default, Redis when processes share credit. */
  holds?: HoldStore;
  /** A hold lapses this long after its last renewal (renewed every third of it while the request runs). Default 2 min. */
  holdTtlMs?: number;
  /** Hold-store failures after admission (settle, release, renew): the request goes on, the hold expires. */
  onHoldError?: (error: unknown, operation: 'settle' | 'release' | 'renew') => void;
}

const DEFAULT_HOLD_TTL_MS = 120_000;

function isUnavailable(error: unknown): boolean {
  return isTollgateError(error) && error.code === 'store.unavailable';
}

export class CreditGate {
  private readonly accounts: TtlCache<AccountSnapshot>;
  private readonly keys: TtlCache<KeySnapshot>;
  private readonly holds: HoldStore;
  private readonly holdTtlMs: number;
  /** Holds of requests still running in this process: renewed so they outlive a long stream. */
  private readonly live = new Set<Hold>();
  private readonly renewTimer: NodeJS.Timeout;
  private readonly idPrefix = randomBytes(6).toString('hex');
  private sequence = 0;

  constructor(private readonly options: CreditGateOptions) {
    this.accounts = new TtlCache(options.ttlMs, 100_000, options.now);
    this.keys = new TtlCache(options.ttlMs, 100_000, options.now);
    this.holds = options.holds ?? new MemoryHoldStore();
    this.holdTtlMs = options.holdTtlMs ?? DEFAULT_HOLD_TTL_MS;
    options.bus.subscribe((topic, id) => {
      const cache = topic === 'account' ? this.accounts : topic === 'key' ? this.keys : null;
      if (cache && id === ALL_IDS) cache.clear();
      else cache?.invalidate(id);
    });
    this.renewTimer = setInterval(() => this.renew(), Math.max(50, Math.floor(this.holdTtlMs / 3)));
    this.renewTimer.unref();
  }

  /** The account from its snapshot (no mark needed: for readers such as the free-model policy). */
  async account(accountId: string): Promise<AccountRecord> {
    const { account } = await this.accountSnapshot(accountId, false);
    if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    return account;
  }

  /** Checks the §5 credit rules against snapshot + live holds + recent charges and, when they pass, holds `estimate`. */
  async admit(key: KeyRecord, isPaid: boolean, estimate: Units): Promise<Hold> {
    const [account, usage] = await Promise.all([this.accountSnapshot(key.accountId, isPaid), key.limit === null ? null : this.keySnapshot(key, isPaid)]);
    if (!account.account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    const now = this.options.now();
    const hold: Hold = { id: `${this.idPrefix}:${++this.sequence}`, accountId: key.accountId, keyHash: key.hash, amount: isPaid ? estimate : 0n, countsByok: key.includeByokInLimit, state: 'held' };
    const check: HoldCheck = {
      ...hold,
      paid: isPaid,
      balance: account.account.totalCredits - account.account.totalUsage,
      accountMark: account.mark ?? 0n,
      keyRemaining: usage && key.limit !== null ? key.limit - limitedUsage(key, usage.usage) : null,
      keyMark: usage?.mark ?? 0n,
      expiresAt: now + this.holdTtlMs,
    };
    const decision = await this.decide(check, account.mark !== null && (usage === null || usage.mark !== null), now);
    if (!decision.admitted) throw refusal(decision, key, isPaid);
    if (hold.amount > 0n) this.live.add(hold);
    else hold.state = 'done';
    return hold;
  }

  private async decide(check: HoldCheck, marksKnown: boolean, now: number): Promise<HoldDecision> {
    // Only a free request gets here without marks (a paid one reloads its snapshots or fails).
    const snapshotOnly = () => decideHold({ paid: check.paid, balance: check.balance, accountRecent: 0n, accountHeld: 0n, keyRemaining: check.keyRemaining, keyRecent: 0n, keyHeld: 0n });
    if (!marksKnown) return snapshotOnly();
    try {
      return await this.holds.admit(check, now);
    } catch (error) {
      if (check.paid || !isUnavailable(error)) {
        // A timed-out call may still have added the hold: take it back, or let it expire.
        if (check.amount > 0n) this.holds.release(check).catch(() => undefined);
        throw error;
      }
      return snapshotOnly();
    }
  }

  /**
   * Replaces the hold with the committed charge (`null`: nothing was charged), in one atomic step of
   * the hold store, so that no admission anywhere sees neither. Never throws: the charge is already
   * committed; if the hold store is down the hold expires on its own.
   */
  async settle(hold: Hold, charge: GenerationRecord | null): Promise<void> {
    const wasHeld = hold.state === 'held';
    hold.state = 'done';
    this.live.delete(hold);
    const account = charge?.totalCost ?? 0n;
    const byok = charge?.isByok && hold.countsByok ? charge.upstreamPromptCost + charge.upstreamCompletionCost : 0n;
    if (!wasHeld && account === 0n && byok === 0n) return;
    try {
      await this.holds.settle(hold, { account, key: account + byok });
    } catch (error) {
      this.options.onHoldError?.(error, 'settle');
    }
  }

  /**
   * The request's charge is durable in the charge journal but not in the store yet: the hold stays
   * (and is renewed) so admissions keep counting it, and becomes the charge once the store has it.
   */
  settleLater(hold: Hold, committed: Promise<GenerationRecord | null>): void {
    if (hold.state !== 'held') return;
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

  /** Drops the hold of a request that charged nothing. Fire and forget: a late release only over-holds. */
  release(hold: Hold): void {
    if (hold.state !== 'held') return;
    hold.state = 'done';
    this.live.delete(hold);
    this.holds.release(hold).catch((error: unknown) => this.options.onHoldError?.(error, 'release'));
  }

  /** Sum of the account's live holds, every process included when the store is shared. */
  held(accountId: string): Promise<Units> {
    return this.holds.held(accountId, this.options.now());
  }

  close(): void {
    clearInterval(this.renewTimer);
  }

  private renew(): void {
    if (this.live.size === 0) return;
    const now = this.options.now();
    this.holds.renew([...this.live], now + this.holdTtlMs, now).catch((error: unknown) => this.options.onHoldError?.(error, 'renew'));
  }

  /** The mark must be read before the store: charges after it are counted, none before it are missed. */
  private async markOrNull(read: () => Promise<ChargeMark>): Promise<ChargeMark | null> {
    try {
      return await read();
    } catch (error) {
      if (isUnavailable(error)) return null;
      throw error;
    }
  }

  /**
   * A paid request needs a snapshot with a mark. One without (read while the hold store was down) is
   * replaced once the store answers again; while it does not, the probe's 503 goes to the caller and
   * the database is not asked again for every request.
   */
  private async withMark<T extends { mark: ChargeMark | null }>(cache: TtlCache<T>, id: string, load: () => Promise<T>, probe: () => Promise<unknown>, needMark: boolean): Promise<T> {
    const snapshot = await cache.get(id, load);
    if (!needMark || snapshot.mark !== null) return snapshot;
    await probe();
    cache.invalidate(id);
    const fresh = await cache.get(id, load);
    if (fresh.mark === null) throw new TollgateError('store.unavailable', 'The credit hold store is unavailable');
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

function refusal(decision: Extract<HoldDecision, { admitted: false }>, key: KeyRecord, isPaid: boolean): TollgateError {
  if (decision.reason === 'key_limit') {
    return new TollgateError('billing.key_limit_exceeded', `Key limit exceeded (${windowName(key.limitReset)} limit)`, {
      metadata: { limit: unitsToUsd(key.limit!), limit_reset: key.limitReset },
    });
  }
  return new TollgateError(
    'billing.insufficient_credits',
    `Insufficient credits: the account balance is ${unitsToUsd(decision.balance)} USD${isPaid ? '; paid models need a positive balance' : ''}. Add credits and retry.`,
    { metadata: { balance: unitsToUsd(decision.balance), in_flight: unitsToUsd(decision.held) } },
  );
}
