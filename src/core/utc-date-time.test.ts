import { describe, expect, it } from 'vitest';
import { parseUtcDateTime } from './utc-date-time.js';

describe('parseUtcDateTime', () => {
  it('accepts UTC date-times, with or without fractional seconds', () => {
    expect(parseUtcDateTime('2027-01-01T00:00:00Z')).toEqual({ ok: true, epochMs: Date.UTC(2027, 0, 1) });
    expect(parseUtcDateTime('2028-02-29T23:59:59.123456Z')).toEqual({
      ok: true,
      epochMs: Date.UTC(2028, 1, 29, 23, 59, 59, 123),
    });
    expect(parseUtcDateTime(new Date(1_800_000_000_000).toISOString())).toEqual({
      ok: true,
      epochMs: 1_800_000_000_000,
    });
  });

  it('refuses offsets and missing zones, saying UTC is required', () => {
    for (const text of ['2027-01-01T00:00:00+02:00', '2027-01-01T00:00:00-0500', '2027-01-01T00:00:00']) {
      const result = parseUtcDateTime(text);
      expect(result.ok, text).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(/UTC/);
    }
  });

  it('refuses dates and times that are not on the calendar', () => {
    for (const text of [
      '2027-02-30T00:00:00Z',
      '2027-02-29T00:00:00Z',
      '2027-04-31T00:00:00Z',
      '2027-13-01T00:00:00Z',
      '2027-00-10T00:00:00Z',
      '2027-01-00T00:00:00Z',
      '2027-01-01T24:00:00Z',
      '2027-01-01T10:60:00Z',
    ]) {
      const result = parseUtcDateTime(text);
      expect(result.ok, text).toBe(false);
    }
    const february = parseUtcDateTime('2027-02-30T00:00:00Z');
    expect(february.ok === false && february.reason).toBe('is not a calendar date: 2027-02 has no day 30');
  });

  it('refuses other shapes', () => {
    for (const text of [
      'tomorrow',
      '2027-01-01',
      '2027-1-1T00:00:00Z',
      ' 2027-01-01T00:00:00Z',
      '2027-01-01T00:00:00ZZ',
    ])
      expect(parseUtcDateTime(text).ok, text).toBe(false);
  });
});
