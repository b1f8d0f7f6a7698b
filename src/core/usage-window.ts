/**
 * Usage windows are part of a counter's identity ("d:2026-11-22"), so a new window starts at zero by
 * itself at the UTC boundary: no cron job resets anything.
 */
export type LimitReset = 'daily' | 'weekly' | 'monthly';
export const LIMIT_RESETS: readonly LimitReset[] = ['daily', 'weekly', 'monthly'];

export interface UsagePeriods {
  day: string; // "d:YYYY-MM-DD"
  week: string; // "w:YYYY-MM-DD" (the Monday that starts the week)
  month: string; // "m:YYYY-MM"
}

export const ALL_TIME = 'all';

function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

/** The last day's periods: every request of a day asks for the same ones (formatting them is not free). */
let last: { dayStart: number; periods: UsagePeriods } | null = null;

/** The day, week and month containing `nowMs` (UTC). The object is shared and frozen: never mutated. */
export function usagePeriods(nowMs: number): UsagePeriods {
  const dayStart = Math.floor(nowMs / DAY_MS) * DAY_MS;
  if (last?.dayStart === dayStart) return last.periods;
  const weekday = (new Date(dayStart).getUTCDay() + 6) % 7; // Monday = 0
  const periods = Object.freeze({
    day: `d:${isoDate(dayStart)}`,
    week: `w:${isoDate(dayStart - weekday * DAY_MS)}`,
    month: `m:${isoDate(dayStart).slice(0, 7)}`,
  });
  last = { dayStart, periods };
  return periods;
}
