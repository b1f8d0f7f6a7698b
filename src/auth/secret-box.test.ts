import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseMasterKey, SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('round-trips and never leaves the plaintext in the ciphertext', () => {
    const box = new SecretBox(k1);
    const sealed = box.encrypt('sk-provider-secret', 'byok_1');
    expect(sealed).not.toContain('sk-provider-secret');
    expect(box.decrypt(sealed, 'byok_1')).toBe('sk-provider-secret');
    expect(box.encrypt('x', 'a')).not.toBe(box.encrypt('x', 'a')); // random IV
  });

  it('rejects tampering and a ciphertext moved to another record', () => {
    const box = new SecretBox(k1);
    const sealed = box.encrypt('secret', 'byok_1');
    expect(() => box.decrypt(sealed, 'byok_2')).toThrow();
    const parts = sealed.split('.');
    parts[4] = Buffer.from('forged').toString('base64url');
    expect(() => box.decrypt(parts.join('.'), 'byok_1')).toThrow();
  });

  it('refuses a truncated tag or a wrong-length IV (regression: GCM accepted 4-byte tags)', () => {
    const box = new SecretBox(k1);
    const sealed = box.encrypt('secret', 'byok_1');
    const parts = sealed.split('.');
    const tag = Buffer.from(parts[3]!, 'base64url');
    expect(tag.length).toBe(16);
    // A 4-byte prefix of the real tag: Node's default GCM decipher verifies only that prefix.
    const truncated = [...parts];
    truncated[3] = tag.subarray(0, 4).toString('base64url');
    expect(() => box.decrypt(truncated.join('.'), 'byok_1')).toThrow(/tag must be 16 bytes/);
    const shortIv = [...parts];
    shortIv[2] = Buffer.from(parts[2]!, 'base64url').subarray(0, 8).toString('base64url');
    expect(() => box.decrypt(shortIv.join('.'), 'byok_1')).toThrow(/IV must be 12 bytes/);
    expect(box.decrypt(sealed, 'byok_1')).toBe('secret');
  });

  it('decrypts entries of a previous master key after rotation, and says they are stale', () => {
    const old = new SecretBox(k1);
    const sealed = old.encrypt('secret', 'id');
    const rotated = new SecretBox(k2, [k1]);
    expect(rotated.decrypt(sealed, 'id')).toBe('secret');
    expect(rotated.isStale(sealed)).toBe(true);
    expect(rotated.isStale(rotated.encrypt('secret', 'id'))).toBe(false);
    expect(() => new SecretBox(k2).decrypt(sealed, 'id')).toThrow(/not configured/);
  });

  it('parses hex and base64 master keys of exactly 32 bytes', () => {
    expect(parseMasterKey(k1.toString('hex')).equals(k1)).toBe(true);
    expect(parseMasterKey(k1.toString('base64')).equals(k1)).toBe(true);
    expect(() => parseMasterKey('short')).toThrow();
  });
});
