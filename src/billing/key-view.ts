/**
 * What a key's limit means right now: the usage in its reset window, what remains, and whether the
 * limit is exhausted. Pure; shared by admission, `GET /key` and the key management API.
 */
import type { Units } from '../core/money.js';
import type { KeyRecord, KeyUsage, UsageTotals } from '../store/types.js';
import type { LimitReset } from '../core/usage-window.js';

export function usageInWindow(reset: LimitReset | null, usage: KeyUsage): UsageTotals {
  switch (reset) {
    case 'daily':
      return usage.day;
    case 'weekly':
      return usage.week;
    case 'monthly':
      return usage.month;
    case null:
      return usage.all;
  }
}

/** Usage that counts against the key's limit in the current window. */
export function limitedUsage(key: Pick<KeyRecord, 'limitReset' | 'includeByokInLimit'>, usage: KeyUsage): Units {
  const window = usageInWindow(key.limitReset, usage);
  return key.includeByokInLimit ? window.usage + window.byokUsage : window.usage;
}

/** null = unlimited; never below zero. */
export function limitRemaining(
  key: Pick<KeyRecord, 'limit' | 'limitReset' | 'includeByokInLimit'>,
  usage: KeyUsage,
  inFlight: Units = 0n,
): Units | null {
  if (key.limit === null) return null;
  const remaining = key.limit - limitedUsage(key, usage) - inFlight;
  return remaining > 0n ? remaining : 0n;
}

export function windowName(reset: LimitReset | null): string {
  switch (reset) {
    case 'daily':
      return 'daily';
    case 'weekly':
      return 'weekly';
    case 'monthly':
      return 'monthly';
    case null:
      return 'total';
  }
}

export const ZERO_USAGE: KeyUsage = Object.freeze({
  all: { usage: 0n, byokUsage: 0n },
  day: { usage: 0n, byokUsage: 0n },
  week: { usage: 0n, byokUsage: 0n },
  month: { usage: 0n, byokUsage: 0n },
});
