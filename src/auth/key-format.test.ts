import { describe, expect, it } from 'vitest';
import { generateKey, hashKey, isWellFormedKey, maskKey } from './key-format.js';
import { createHash } from 'node:crypto';

describe('key format', () => {
  it('generates keys that pass their own checksum', () => {
    for (let i = 0; i < 50; i++) {
      const key = generateKey();
      expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
      expect(isWellFormedKey(key)).toBe(true);
    }
  });

  it('rejects a single-character typo, wrong prefix, uppercase and wrong length', () => {
    const key = generateKey();
    const last = key.at(-10) === 'a' ? 'b' : 'a';
    expect(isWellFormedKey(key.slice(0, -10) + last + key.slice(-9))).toBe(false);
    expect(isWellFormedKey(key.replace('sk-tg-v1-', 'sk-or-v1-'))).toBe(false);
    expect(isWellFormedKey(key.toUpperCase())).toBe(false);
    expect(isWellFormedKey(key + '0')).toBe(false);
    expect(isWellFormedKey('')).toBe(false);
    expect(isWellFormedKey(`sk-tg-v1-${'0'.repeat(64)}`)).toBe(false);
  });

  it('hashes with SHA-256 of the whole key and masks to first/last three hex', () => {
    const key = generateKey();
    expect(hashKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    const hex = key.slice(9);
    expect(maskKey(key)).toBe(`sk-tg-v1-${hex.slice(0, 3)}...${hex.slice(-3)}`);
  });
});
