/**
 * Admission by credits (api.md §5): paid models need a positive balance, every model a non-negative
 * one, and the key's limit must not be exhausted. Balances and key usage come from short-lived
 * snapshots (no store round trip per request) that committed charges update in place; requests in
 * flight hold their estimated cost, so a burst cannot spend far past zero.
 */
import { TollgateError } from '../core/errors.js';
import type { ChangeBus } from '../core/change-bus.js';
import { TtlCache } from '../core/ttl-cache.js';
import { unitsToUsd, type Units } from '../core/money.js';
import type { AccountRecord, KeyRecord, KeyUsage, Settlement, Store } from '../store/types.js';
import { limitRemaining, windowName } from './key-view.js';
import { usagePeriods, type UsagePeriods } from './usage-window.js';

interface KeySnapshot {
  periods: UsagePeriods;
  usage: KeyUsage;
}

export interface Hold {
  accountId: string;
  keyHash: string;
  amount: Units;
  released: boolean;
}

export interface CreditGateOptions {
  store: Store;
  bus: ChangeBus;
  now: () => number;
  ttlMs: number;
}

function addTo(map: Map<string, Units>, id: string, delta: Units): void {
  const next = (map.get(id) ?? 0n) + delta;
  if (next === 0n) map.delete(id);
  else map.set(id, next);
}

export class CreditGate {
  private readonly accounts: TtlCache<AccountRecord | null>;
  private readonly keys: TtlCache<KeySnapshot>;
  private readonly accountHolds = new Map<string, Units>();
  private readonly keyHolds = new Map<string, Units>();

  constructor(private readonly options: CreditGateOptions) {
    this.accounts = new TtlCache(options.ttlMs, 100_000, options.now);
    this.keys = new TtlCache(options.ttlMs, 100_000, options.now);
    options.bus.subscribe((topic, id) => {
      if (topic === 'account') this.accounts.invalidate(id);
      if (topic === 'key') this.keys.invalidate(id);
    });
  }

  async account(accountId: string): Promise<AccountRecord> {
    const account = await this.accounts.get(accountId, () => this.options.store.getAccount(accountId));
    if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    return account;
  }

  private async keyUsage(keyHash: string): Promise<KeyUsage> {
    const periods = usagePeriods(this.options.now());
    const load = async (): Promise<KeySnapshot> => {
      const usage = await this.options.store.getKeyUsage([keyHash], periods);
      return { periods, usage: usage.get(keyHash)! };
    };
    let snapshot = await this.keys.get(keyHash, load);
    if (snapshot.periods.day !== periods.day) {
      this.keys.invalidate(keyHash);
      snapshot = await this.keys.get(keyHash, load);
    }
    return snapshot.usage;
  }

  /** Checks the §5 credit rules and, when they pass, holds `estimate` until `release`. */
  async admit(key: KeyRecord, isPaid: boolean, estimate: Units): Promise<Hold> {
    const [account, usage] = await Promise.all([this.account(key.accountId), key.limit === null ? null : this.keyUsage(key.hash)]);
    const balance = account.totalCredits - account.totalUsage;
    const available = balance - (this.accountHolds.get(account.id) ?? 0n);
    if (balance < 0n || (isPaid && available <= 0n)) {
      throw new TollgateError(
        'billing.insufficient_credits',
        `Insufficient credits: the account balance is ${unitsToUsd(balance)} USD${isPaid ? '; paid models need a positive balance' : ''}. Add credits and retry.`,
        { metadata: { balance: unitsToUsd(balance), in_flight: unitsToUsd(available < balance ? balance - available : 0n) } },
      );
    }
    if (usage) {
      const remaining = limitRemaining(key, usage, this.keyHolds.get(key.hash) ?? 0n);
      if (remaining !== null && remaining <= 0n) {
        throw new TollgateError('billing.key_limit_exceeded', `Key limit exceeded (${windowName(key.limitReset)} limit)`, {
          metadata: { limit: unitsToUsd(key.limit!), limit_reset: key.limitReset },
        });
      }
    }
    const hold: Hold = { accountId: account.id, keyHash: key.hash, amount: isPaid ? estimate : 0n, released: false };
    addTo(this.accountHolds, hold.accountId, hold.amount);
    addTo(this.keyHolds, hold.keyHash, hold.amount);
    return hold;
  }

  release(hold: Hold): void {
    if (hold.released) return;
    hold.released = true;
    addTo(this.accountHolds, hold.accountId, -hold.amount);
    addTo(this.keyHolds, hold.keyHash, -hold.amount);
  }

  /** Fold committed charges into the snapshots, so the next admission sees them without a store read. */
  applyCommitted(settlements: readonly Settlement[], applied: readonly boolean[]): void {
    settlements.forEach((settlement, i) => {
      if (!applied[i]) return;
      const g = settlement.generation;
      const account = this.accounts.peek(g.accountId);
      if (account) this.accounts.replace(g.accountId, { ...account, totalUsage: account.totalUsage + g.totalCost });
      const snapshot = this.keys.peek(g.keyHash);
      if (snapshot && snapshot.periods.day === settlement.periods.day) {
        const byok = g.isByok ? g.upstreamPromptCost + g.upstreamCompletionCost : 0n;
        const bump = (t: { usage: Units; byokUsage: Units }) => ({ usage: t.usage + g.totalCost, byokUsage: t.byokUsage + byok });
        const sameWeek = snapshot.periods.week === settlement.periods.week;
        const sameMonth = snapshot.periods.month === settlement.periods.month;
        this.keys.replace(g.keyHash, {
          periods: snapshot.periods,
          usage: {
            all: bump(snapshot.usage.all),
            day: bump(snapshot.usage.day),
            week: sameWeek ? bump(snapshot.usage.week) : snapshot.usage.week,
            month: sameMonth ? bump(snapshot.usage.month) : snapshot.usage.month,
          },
        });
      }
    });
  }

  inFlight(accountId: string): Units {
    return this.accountHolds.get(accountId) ?? 0n;
  }
}
