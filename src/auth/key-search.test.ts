import { describe, expect, it } from 'vitest';
import { generateKey, maskKey } from './key-format.js';
import { findKeys, KEY_SEARCH_SOURCE, replaceKeys } from './key-search.js';

describe('finding keys in text', () => {
  const key = generateKey();

  it('finds well-formed keys with their offsets and ignores look-alikes', () => {
    const bad = `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`;
    const text = `a ${key} b ${bad} c ${key}`;
    expect(findKeys(text)).toEqual([
      { key, index: 2 },
      { key, index: text.lastIndexOf(key) },
    ]);
    expect(findKeys(`${key}f`)).toEqual([]);
    expect(findKeys('no prefix at all')).toEqual([]);
  });

  it('replaces keys and returns the very same string when there is none', () => {
    expect(replaceKeys(`x${key}y`, maskKey)).toBe(`x${maskKey(key)}y`);
    const clean = 'sk-tg-v1- alone';
    expect(replaceKeys(clean, maskKey)).toBe(clean);
  });

  it('the documented push-protection pattern matches generated keys', () => {
    expect(new RegExp(`^${KEY_SEARCH_SOURCE}$`).test(key)).toBe(true);
  });
});
