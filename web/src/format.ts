/**
 * How numbers and times read on the dashboard: USD to the cent, with the rest of an amount's digits
 * when it has any (to 9 places, the gateway's unit) — never rounded, so a balance of 9.999642 is not
 * shown as $10.00; times in UTC.
 */

const usd = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 9,
});
const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatUsd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return usd.format(value);
}

const RESET_WORDS = { daily: 'per day', weekly: 'per week', monthly: 'per month' } as const;

/** A key's spending limit with its window: `$3.00 per month`, `$5.00 in total`, `No limit`. */
export function formatLimit(limit: number | null, reset: keyof typeof RESET_WORDS | null): string {
  if (limit === null) return 'No limit';
  return `${formatUsd(limit)} ${reset ? RESET_WORDS[reset] : 'in total'}`;
}

export function formatInteger(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : integer.format(value);
}

/** `2026-11-23 14:05 UTC` */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().slice(0, 10);
}

/**
 * When a key stops working: its last day (`2027-01-15`) when it runs to that day's end, as the
 * dashboard's own keys do (23:59:59 UTC); otherwise the moment (`2027-03-01 00:00 UTC`: an app's key
 * given a midnight expiry stops as 03-01 begins, and a day alone would name the wrong last day).
 */
export function formatExpiry(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().slice(11, 19) === '23:59:59' ? formatDate(iso) : formatTime(iso);
}

/** Latency arrives in milliseconds. */
export function formatLatency(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

/** The last `days` UTC days, oldest first, today included, as YYYY-MM-DD. */
export function lastUtcDays(days: number, now = Date.now()): string[] {
  const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  return Array.from({ length: days }, (_, i) =>
    new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}
