/**
 * Free-model requests per account per UTC day, for `free_model_daily_requests` in `GET /key`.
 * Counts requests to `:free` models admitted by this process. The enforcing limiter (per minute and
 * per day, shared through Redis across processes) replaces this in the limits work.
 */
import type { AccountRecord } from '../store/types.js';
import type { Config } from '../config/schema.js';
import { usagePeriods } from '../billing/usage-window.js';
import { usdToUnits } from '../core/money.js';

export class FreeModelUsage {
  private day = '';
  private counts = new Map<string, number>();

  constructor(
    private readonly limits: Config['limits']['free_models'],
    private readonly now: () => number,
  ) {}

  private roll(): void {
    const day = usagePeriods(this.now()).day;
    if (day !== this.day) {
      this.day = day;
      this.counts = new Map();
    }
  }

  record(accountId: string): void {
    this.roll();
    this.counts.set(accountId, (this.counts.get(accountId) ?? 0) + 1);
  }

  dailyLimit(account: AccountRecord): number {
    return account.totalPurchased >= usdToUnits(this.limits.credits_threshold) ? this.limits.per_day_with_credits : this.limits.per_day;
  }

  daily(account: AccountRecord): { limit: number; used: number; remaining: number } {
    this.roll();
    const limit = this.dailyLimit(account);
    const used = this.counts.get(account.id) ?? 0;
    return { limit, used, remaining: Math.max(0, limit - used) };
  }
}
