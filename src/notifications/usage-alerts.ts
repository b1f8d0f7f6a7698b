/**
 * Low-balance and key-limit notices, detected after charges commit — off the request path: the
 * settler reports committed charges, the accounts and keys they touched are collected, and a check
 * runs `delayMs` later, once per account and key however many charges landed meanwhile. A check reads
 * the current totals, so a missed or merged check is caught by the next one.
 *
 * "Once per window" is the outbox's unique dedupe key:
 *   low balance   `low_balance:<account>:<total credits>` — once until credits are added;
 *   key limit     `key_limit:<80|100>:<key>:<window period>:<limit>` — once per level per reset
 *                 window (and again if the limit changes).
 */
import { limitedUsage, windowName } from '../billing/key-view.js';
import { ALL_TIME, usagePeriods } from '../core/usage-window.js';
import { formatUnitsUsd, type Units } from '../core/money.js';
import type { MailOutbox } from '../mail/mail-outbox.js';
import { keyLimitMail, lowBalanceMail } from '../mail/templates.js';
import type { Logger } from '../observability/logger.js';
import type { SettleOutcome, Settlement, Store } from '../store/types.js';

export interface UsageAlertDeps {
  store: Store;
  mail: MailOutbox;
  now(): number;
  log: Logger;
  /** Threshold of accounts that did not choose one. */
  defaultThreshold: Units;
  delayMs: number;
}

const usd = formatUnitsUsd;

export class UsageAlerts {
  private readonly accounts = new Set<string>();
  private readonly keys = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly deps: UsageAlertDeps) {}

  /** The settler's hook: cheap, synchronous, never throws. */
  noteCharges(settlements: readonly Settlement[], outcomes: readonly SettleOutcome[]): void {
    settlements.forEach((settlement, i) => {
      if (outcomes[i]?.applied === false) return;
      // A charge of nothing (a `:free` model) lowers no balance: a free-tier account with no credits
      // was told its balance is low on its first free request (outside check). Nor a key's usage —
      // unless it is an own-key request, whose list cost a key's limit may count (`include_byok_in_limit`).
      const generation = settlement.generation;
      if (generation.totalCost <= 0n && !generation.isByok) return;
      if (generation.totalCost > 0n) this.accounts.add(generation.accountId);
      this.keys.add(generation.keyHash);
    });
    if ((this.accounts.size > 0 || this.keys.size > 0) && this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.deps.delayMs);
      this.timer.unref();
    }
  }

  /** Runs the pending checks now (shutdown, tests). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    if (this.accounts.size === 0 && this.keys.size === 0) return;
    const accounts = [...this.accounts];
    const keys = [...this.keys];
    this.accounts.clear();
    this.keys.clear();
    this.running = this.check(accounts, keys).finally(() => (this.running = null));
    await this.running;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }

  private async check(accounts: readonly string[], keys: readonly string[]): Promise<void> {
    for (const id of accounts) await this.guard(() => this.checkBalance(id), { account: id });
    for (const hash of keys) await this.guard(() => this.checkKeyLimit(hash), { key: hash.slice(0, 12) });
  }

  private async guard(check: () => Promise<void>, fields: Record<string, string>): Promise<void> {
    try {
      await check();
    } catch (error) {
      this.deps.log.warn({ ...fields, err: error }, 'notification check failed');
    }
  }

  async checkBalance(accountId: string): Promise<void> {
    const { store, mail } = this.deps;
    const [account, settings] = await Promise.all([
      store.getAccount(accountId),
      store.notifications.settings(accountId),
    ]);
    if (!account || !settings.lowBalanceEnabled) return;
    const threshold = settings.lowBalanceThreshold ?? this.deps.defaultThreshold;
    const balance = account.totalCredits - account.totalUsage;
    if (balance >= threshold) return;
    // One notice per window, and a window per top-up: the total of credits would name a window
    // again when a top-up brings it back to an earlier total (after a downward adjustment).
    const window = (await store.notifications.lastTopUp(accountId)) ?? 'none';
    await mail.enqueue([
      mail.compose(
        lowBalanceMail({ balanceUsd: usd(balance), thresholdUsd: usd(threshold), dashboard: mail.dashboardUrl }),
        {
          kind: 'low_balance',
          recipient: account.email,
          accountId,
          dedupeKey: `low_balance:${accountId}:${window}`,
        },
      ),
    ]);
  }

  async checkKeyLimit(hash: string): Promise<void> {
    const { store, mail } = this.deps;
    const key = await store.getKey(hash);
    if (!key || key.limit === null || key.limit <= 0n) return;
    const settings = await store.notifications.settings(key.accountId);
    if (!settings.keyLimitEnabled) return;
    const periods = usagePeriods(this.deps.now());
    const usage = (await store.getKeyUsage([hash], periods)).get(hash);
    if (!usage) return;
    const used = limitedUsage(key, usage);
    const percent = used * 100n >= key.limit * 100n ? 100 : used * 100n >= key.limit * 80n ? 80 : null;
    if (percent === null) return;
    const account = await store.getAccount(key.accountId);
    if (!account) return;
    const period =
      key.limitReset === 'daily'
        ? periods.day
        : key.limitReset === 'weekly'
          ? periods.week
          : key.limitReset === 'monthly'
            ? periods.month
            : ALL_TIME;
    const window = windowName(key.limitReset);
    await mail.enqueue([
      mail.compose(
        keyLimitMail({
          key,
          percent,
          limitUsd: usd(key.limit),
          usedUsd: usd(used),
          window,
          resets: key.limitReset !== null,
          dashboard: mail.dashboardUrl,
        }),
        {
          kind: 'key_limit',
          recipient: account.email,
          accountId: account.id,
          dedupeKey: `key_limit:${percent}:${hash}:${period}:${key.limit}`,
        },
      ),
    ]);
  }
}
