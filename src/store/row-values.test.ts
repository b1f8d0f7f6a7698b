import { describe, expect, it } from 'vitest';
import { asNumber } from './row-values.js';

describe('asNumber', () => {
  it('reads integers given as text exactly, short ones without a bigint, and refuses what is not a safe integer', () => {
    expect(asNumber('0')).toBe(0);
    expect(asNumber('660')).toBe(660);
    expect(asNumber('999999999999999')).toBe(999_999_999_999_999);
    expect(asNumber('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(asNumber('-5')).toBe(-5);
    expect(Object.is(asNumber('-0'), 0)).toBe(true);
    expect(asNumber(12n)).toBe(12);
    for (const bad of ['9007199254740993', '-9007199254740993', '1.5', '', ' 1', '1e3', '0x10', 'NaN'])
      expect(() => asNumber(bad), bad).toThrow(TypeError);
  });
});
