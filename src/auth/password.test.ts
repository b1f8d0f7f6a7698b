import { randomBytes, scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { burnPasswordCheck, generatePassword, hashPassword, needsRehash, verifyPassword } from './password.js';

describe('password hashing (scrypt)', () => {
  it('stores a self-describing hash with a fresh 16-byte salt; verifies the password and nothing else', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^scrypt\$N=32768,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b); // salted
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', a)).toBe(false);
    expect(await verifyPassword('', a)).toBe(false);
    expect(needsRehash(a)).toBe(false);
  });

  it('Unicode passwords are compared after NFC normalisation (the same text typed on two keyboards)', async () => {
    const hash = await hashPassword('caf\u00e9 au lait!');
    expect(await verifyPassword('cafe\u0301 au lait!', hash)).toBe(true);
  });

  it('reads the first format (hex salt and hash, Node defaults) and asks for a re-hash', async () => {
    const salt = randomBytes(16);
    const legacy = `scrypt$${salt.toString('hex')}$${scryptSync('old password 1', salt, 32).toString('hex')}`;
    expect(await verifyPassword('old password 1', legacy)).toBe(true);
    expect(await verifyPassword('old password 2', legacy)).toBe(false);
    expect(needsRehash(legacy)).toBe(true);
  });

  it('refuses corrupt or hostile stored hashes instead of allocating for them', async () => {
    for (const stored of [
      '',
      'bcrypt$x',
      'scrypt$N=3,r=8,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA',
      'scrypt$N=4294967296,r=8,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA',
      'scrypt$N=1024,r=8,p=1$AAAA$AA',
    ]) {
      expect(await verifyPassword('anything', stored)).toBe(false);
    }
  });

  it('the dummy check for unknown e-mails is false; generated passwords are long and distinct', async () => {
    expect(await burnPasswordCheck('whatever')).toBe(false);
    const p = generatePassword();
    expect(p).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(generatePassword()).not.toBe(p);
  });
});
