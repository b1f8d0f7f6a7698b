/** UTC calendar days as `YYYY-MM-DD` strings: they sort and compare as text, in SQL too. */
const DAY_MS = 86_400_000;

export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** A strict `YYYY-MM-DD` that names a real calendar day, or null. */
export function parseUtcDay(text: unknown): string | null {
  if (typeof text !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) || utcDay(ms) !== text ? null : text;
}

export function addDays(day: string, days: number): string {
  return utcDay(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS);
}

/** Days from `from` to `to` (positive when `to` is later). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** The Monday that starts the day's week (ISO week). */
export function weekStart(day: string): string {
  const weekday = (new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7;
  return addDays(day, -weekday);
}

export function monthStart(day: string): string {
  return `${day.slice(0, 7)}-01`;
}
