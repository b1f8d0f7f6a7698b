/**
 * In-flight credit holds and the charges that replace them (docs/api.md: "admission counts requests
 * already in flight"). One contract, two stores: `MemoryHoldStore` (one process) and
 * `RedisHoldStore` (every gateway process sharing one Redis); `test/billing.hold-store.contract.test.ts`
 * runs the same spec against both.
 *
 * Admission compares against a *snapshot* of the balance and key usage (store-backed, cached for
 * `cache.balance_ttl_ms`), so it must also count what the snapshot cannot know yet:
 *   - holds: requests admitted and not finished, by any process;
 *   - recent charges: charges settled after the snapshot was read. Every settled charge adds to a
 *     per-account and a per-key counter here; the gate reads the counter ("mark") *before* reading
 *     its snapshot, so `counter − mark` is every charge the snapshot may have missed. A charge that
 *     lands between the mark and the store read is counted twice until the snapshot expires — the
 *     error is on the refusing side, never the spending side.
 * Settlement removes the hold and adds the charge in one atomic step, so no admission, in any
 * process, sees neither.
 *
 * Holds expire at `expiresAt` unless renewed, so a process killed mid-request cannot pin an
 * account's credit forever; the gate renews the holds of requests still running.
 */
import type { Units } from '../core/money.js';

/** A position in a charge counter; opaque (each store picks its own unit), only handed back to `admit`. */
export type ChargeMark = bigint;

export interface ChargeMarks {
  account: ChargeMark;
  key: ChargeMark;
}

export interface HoldRef {
  /** Unique per request: the generation id. */
  id: string;
  accountId: string;
  keyHash: string;
}

/** A hold its process still owns, with what it holds: what `restore` re-registers. */
export interface OwnedHold extends HoldRef {
  amount: Units;
}

export interface HoldCheck extends HoldRef {
  /** Held while the request runs; 0 for free models (the rules are checked, nothing is held). */
  amount: Units;
  /** Paid models need a positive balance after holds; every model a non-negative one. */
  paid: boolean;
  /** `totalCredits − totalUsage` from the account snapshot, and the account mark read before it. */
  balance: Units;
  accountMark: ChargeMark;
  /** The key's limit minus its usage in the current window, from its snapshot (may be negative); null = no limit. */
  keyRemaining: Units | null;
  keyMark: ChargeMark;
  /** Epoch ms after which the hold no longer counts unless renewed. */
  expiresAt: number;
  /**
   * What this process itself holds live on the account and on the key, by its own count. A shared
   * store holding less lost its data (it cannot lose a live hold otherwise): nothing is decided from it.
   */
  ownHeld?: { account: Units; key: Units };
}

export type HoldDecision =
  | { admitted: true }
  | {
      admitted: false;
      reason: 'balance' | 'key_limit';
      /** Snapshot balance minus charges it did not know yet. */
      balance: Units;
      /** Holds of other requests counted against the account (or the key, for `key_limit`). */
      held: Units;
    };

/** What a settlement charged, for the account's counter and for the key's (BYOK usage counts when the key says so). */
export interface ChargedAmounts {
  account: Units;
  key: Units;
}

export interface HoldStore {
  /** The account's and key's charge counters; read them *before* loading the snapshots they qualify. */
  marks(accountId: string, keyHash: string | null): Promise<ChargeMarks>;
  /** Atomically: drop expired holds, apply the §5 rules to the live state, and add this hold if admitted. */
  admit(check: HoldCheck, now: number): Promise<HoldDecision>;
  /** Atomically replaces the hold (if still there) with the committed charge. */
  settle(hold: HoldRef, charged: ChargedAmounts): Promise<void>;
  /** Removes the hold (no charge). A hold that expired already is a no-op. */
  release(hold: HoldRef): Promise<void>;
  /** Pushes the expiry of holds still live at `now` (never earlier); expired or released ones stay gone. */
  renew(holds: readonly HoldRef[], expiresAt: number, now: number): Promise<void>;
  /**
   * Re-registers holds their process still owns, after the store lost them (Redis came back empty) or
   * let them lapse (the process could not renew them while cut off): a missing hold is added without
   * any rule check (its request was admitted already), a present one gets the later expiry. Idempotent.
   */
  restore(holds: readonly OwnedHold[], expiresAt: number, now: number): Promise<void>;
  /** Sum of the account's live holds (ops, tests). */
  held(accountId: string, now: number): Promise<Units>;
  close(): Promise<void>;
}

/** The figures the rules need, already reduced to this request. */
export interface HoldFigures {
  paid: boolean;
  balance: Units;
  accountRecent: Units;
  accountHeld: Units;
  keyRemaining: Units | null;
  keyRecent: Units;
  keyHeld: Units;
}

/**
 * Charges since a mark. A counter below its mark means the counter was reset (its Redis key expired
 * after a long idle spell): then every charge it shows is newer than the mark.
 */
export function chargedSince<T extends bigint | number>(counter: T, mark: T): T {
  return (counter < mark ? counter : counter - mark) as T;
}

/** docs/api.md over live figures. `RedisHoldStore`'s Lua script implements the same rules. */
export function decideHold(f: HoldFigures): HoldDecision {
  const balance = f.balance - f.accountRecent;
  if (balance < 0n || (f.paid && balance - f.accountHeld <= 0n))
    return { admitted: false, reason: 'balance', balance, held: f.accountHeld };
  if (f.keyRemaining !== null && f.keyRemaining - f.keyRecent - f.keyHeld <= 0n) {
    return { admitted: false, reason: 'key_limit', balance, held: f.keyHeld };
  }
  return { admitted: true };
}
