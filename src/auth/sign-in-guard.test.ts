import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { familiarAddressTag } from './sign-in-guard.js';

describe('familiarAddressTag', () => {
  it('is 20 bits: too few to give an address back (about 4,096 IPv4 addresses share each value)', () => {
    const tag = familiarAddressTag('acct_1', '192.0.2.50');
    expect(tag).toMatch(/^[0-9a-f]{5}$/);
    // Not the address's own hash, which anyone could match by hashing the 2^32 candidates.
    expect(createHash('sha256').update('192.0.2.50').digest('hex').startsWith(tag)).toBe(false);
  });

  it('depends on the account: one address has unrelated values for two accounts', () => {
    expect(familiarAddressTag('acct_1', '192.0.2.50')).toBe(familiarAddressTag('acct_1', '192.0.2.50'));
    expect(familiarAddressTag('acct_1', '192.0.2.50')).not.toBe(familiarAddressTag('acct_2', '192.0.2.50'));
  });
});
