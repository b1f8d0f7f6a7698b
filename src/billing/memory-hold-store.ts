/**
 * Holds and charge counters in this process's memory: the embedded deployment (one process), and
 * the reference for `RedisHoldStore`. Every operation completes synchronously, so admission checks
 * and adds a hold with nothing interleaved. Amounts are exact units.
 */
import type { Units } from '../core/money.js';
import {
  chargedSince,
  decideHold,
  type ChargedAmounts,
  type ChargeMarks,
  type HoldCheck,
  type HoldDecision,
  type HoldRef,
  type HoldStore,
  type OwnedHold,
} from './hold-store.js';

interface LiveHold {
  keyHash: string;
  amount: Units;
  expiresAt: number;
}

class AccountHolds {
  readonly holds = new Map<string, LiveHold>();
  held: Units = 0n;
  readonly keyHeld = new Map<string, Units>();
  charged: Units = 0n;
  readonly keyCharged = new Map<string, Units>();
  /** No hold expires before this (a lower bound: renewals only push expiries later). */
  nextExpiry = Number.POSITIVE_INFINITY;

  drop(id: string): void {
    const hold = this.holds.get(id);
    if (!hold) return;
    this.holds.delete(id);
    this.held -= hold.amount;
    // A key at zero keeps its entry (as keyCharged does): deleting it and adding it back with the
    // next request would rebuild the map's table in the old generation (core/live-list.ts).
    this.keyHeld.set(hold.keyHash, (this.keyHeld.get(hold.keyHash) ?? 0n) - hold.amount);
  }

  add(hold: { id: string; keyHash: string; amount: Units }, expiresAt: number): void {
    if (hold.amount <= 0n || this.holds.has(hold.id)) return;
    this.holds.set(hold.id, { keyHash: hold.keyHash, amount: hold.amount, expiresAt });
    this.held += hold.amount;
    this.keyHeld.set(hold.keyHash, (this.keyHeld.get(hold.keyHash) ?? 0n) + hold.amount);
    this.nextExpiry = Math.min(this.nextExpiry, expiresAt);
  }

  prune(now: number): void {
    if (now < this.nextExpiry) return;
    let next = Number.POSITIVE_INFINITY;
    for (const [id, hold] of this.holds) {
      if (hold.expiresAt <= now) this.drop(id);
      else next = Math.min(next, hold.expiresAt);
    }
    this.nextExpiry = next;
  }

  get idle(): boolean {
    // Counters are kept once non-zero: a mark handed out earlier must keep meaning the same position.
    return this.holds.size === 0 && this.charged === 0n && this.keyCharged.size === 0;
  }
}

export class MemoryHoldStore implements HoldStore {
  private readonly accounts = new Map<string, AccountHolds>();

  private of(accountId: string): AccountHolds {
    let entry = this.accounts.get(accountId);
    if (!entry) {
      entry = new AccountHolds();
      this.accounts.set(accountId, entry);
    }
    return entry;
  }

  async marks(accountId: string, keyHash: string | null): Promise<ChargeMarks> {
    return this.marksNow(accountId, keyHash);
  }

  /** Synchronous `marks`, for the credit gate's own record of its holds and charges. */
  marksNow(accountId: string, keyHash: string | null): ChargeMarks {
    const entry = this.accounts.get(accountId);
    return { account: entry?.charged ?? 0n, key: keyHash === null ? 0n : (entry?.keyCharged.get(keyHash) ?? 0n) };
  }

  async admit(check: HoldCheck, now: number): Promise<HoldDecision> {
    const entry = this.of(check.accountId);
    entry.prune(now);
    const decision = decideHold({
      paid: check.paid,
      balance: check.balance,
      accountRecent: chargedSince(entry.charged, check.accountMark),
      accountHeld: entry.held,
      keyRemaining: check.keyRemaining,
      keyRecent: chargedSince(entry.keyCharged.get(check.keyHash) ?? 0n, check.keyMark),
      keyHeld: entry.keyHeld.get(check.keyHash) ?? 0n,
    });
    if (decision.admitted) entry.add(check, check.expiresAt);
    if (entry.idle) this.accounts.delete(check.accountId);
    return decision;
  }

  /**
   * Drops accounts with no live hold, counters included (the credit gate's own record, while Redis is
   * trusted: a mark handed out before then reads as a reset counter, which errs on the refusing side).
   */
  forgetIdle(): void {
    for (const [id, entry] of this.accounts) if (entry.holds.size === 0) this.accounts.delete(id);
  }

  /** Adds a hold with no rule check: a request admitted elsewhere (the credit gate's own record of its holds). */
  add(hold: OwnedHold, expiresAt: number): void {
    this.of(hold.accountId).add(hold, expiresAt);
  }

  async settle(hold: HoldRef, charged: ChargedAmounts): Promise<void> {
    // One synchronous step: the hold goes and the charge arrives with nothing in between.
    const entry = this.of(hold.accountId);
    entry.drop(hold.id);
    entry.charged += charged.account;
    if (charged.key !== 0n)
      entry.keyCharged.set(hold.keyHash, (entry.keyCharged.get(hold.keyHash) ?? 0n) + charged.key);
    if (entry.idle) this.accounts.delete(hold.accountId);
  }

  async release(hold: HoldRef): Promise<void> {
    const entry = this.accounts.get(hold.accountId);
    if (!entry) return;
    entry.drop(hold.id);
    if (entry.idle) this.accounts.delete(hold.accountId);
  }

  async renew(holds: readonly HoldRef[], expiresAt: number, now: number): Promise<void> {
    for (const ref of holds) {
      const hold = this.accounts.get(ref.accountId)?.holds.get(ref.id);
      // An expired hold is gone even if nobody pruned it yet: renewing must not bring it back.
      if (hold && hold.expiresAt > now && hold.expiresAt < expiresAt) hold.expiresAt = expiresAt;
    }
  }

  async restore(holds: readonly OwnedHold[], expiresAt: number, now: number): Promise<void> {
    for (const hold of holds) {
      const entry = this.of(hold.accountId);
      entry.prune(now);
      const present = entry.holds.get(hold.id);
      if (present) present.expiresAt = Math.max(present.expiresAt, expiresAt);
      else entry.add(hold, expiresAt);
    }
  }

  /** What this record holds now for the account and for one of its keys (synchronous). */
  heldNow(accountId: string, keyHash: string, now: number): { account: Units; key: Units } {
    const entry = this.accounts.get(accountId);
    if (!entry) return { account: 0n, key: 0n };
    entry.prune(now);
    return { account: entry.held, key: entry.keyHeld.get(keyHash) ?? 0n };
  }

  async held(accountId: string, now: number): Promise<Units> {
    const entry = this.accounts.get(accountId);
    if (!entry) return 0n;
    entry.prune(now);
    return entry.held;
  }

  async close(): Promise<void> {
    this.accounts.clear();
  }
}
