import { describe, expect, it } from 'vitest';
import { usagePeriods } from './usage-window.js';

describe('usage windows (UTC)', () => {
  it('names day, Monday-start week and month', () => {
    // Sunday 2026-11-22 23:59:59.999Z belongs to the week that began Monday 2026-11-16.
    const sunday = Date.UTC(2026, 10, 22, 23, 59, 59, 999);
    expect(usagePeriods(sunday)).toEqual({ day: 'd:2026-11-22', week: 'w:2026-11-16', month: 'm:2026-11' });
    const monday = Date.UTC(2026, 10, 23);
    expect(usagePeriods(monday)).toEqual({ day: 'd:2026-11-23', week: 'w:2026-11-23', month: 'm:2026-11' });
    expect(usagePeriods(Date.UTC(2027, 0, 1)).week).toBe('w:2026-12-28');
  });

  it('answers each instant with its own day, however the calls alternate between days', () => {
    const a = Date.UTC(2026, 10, 22, 12);
    const b = Date.UTC(2026, 10, 23, 0, 0, 0, 1);
    for (let i = 0; i < 3; i++) {
      expect(usagePeriods(a).day).toBe('d:2026-11-22');
      expect(usagePeriods(b)).toEqual({ day: 'd:2026-11-23', week: 'w:2026-11-23', month: 'm:2026-11' });
      expect(usagePeriods(a + 1000).week).toBe('w:2026-11-16');
    }
    expect(Object.isFrozen(usagePeriods(a))).toBe(true);
  });
});
