/**
 * Strict ISO-8601 UTC date-times (`2027-01-01T00:00:00Z`, fractional seconds allowed), as the contract
 * requires for `expires_at`. `Date.parse` is too lenient for input: it accepts February 30th (rolling
 * over to March) and any offset, so a caller's mistake would silently become another instant.
 */

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;

export type UtcDateTimeResult = { ok: true; epochMs: number } | { ok: false; reason: string };

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

export function parseUtcDateTime(text: string): UtcDateTimeResult {
  const match = PATTERN.exec(text);
  if (!match) return { ok: false, reason: 'must be an ISO-8601 UTC date-time, e.g. 2027-01-01T00:00:00Z' };
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  if (zone !== 'Z')
    return { ok: false, reason: 'must be in UTC, ending in "Z" (e.g. 2027-01-01T00:00:00Z); offsets are not accepted' };
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12) return { ok: false, reason: `has no month ${mo}` };
  if (day < 1 || day > daysInMonth(year, month))
    return { ok: false, reason: `is not a calendar date: ${y}-${mo} has no day ${d}` };
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59)
    return { ok: false, reason: `is not a time of day: ${h}:${mi}:${s}` };
  const ms = fraction === undefined ? 0 : Number(fraction.padEnd(3, '0').slice(0, 3));
  return { ok: true, epochMs: Date.UTC(year, month - 1, day, Number(h), Number(mi), Number(s), ms) };
}
