import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TollgateError } from '../core/errors.js';
import { MemoryRateLimiter } from '../limits/memory-rate-limiter.js';
import { familiarAddressTag, SignInGuard, waitInWords } from './sign-in-guard.js';

describe('waitInWords', () => {
  it('says seconds under a minute and a half, whole minutes (rounded up) past it', () => {
    expect(waitInWords(1)).toBe('1 second');
    expect(waitInWords(60)).toBe('60 seconds');
    expect(waitInWords(89)).toBe('89 seconds');
    expect(waitInWords(90)).toBe('2 minutes');
    expect(waitInWords(897)).toBe('15 minutes');
  });
});

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

describe('password-reset requests', () => {
  const limits = {
    perAccountAndAddress: 5,
    perAccount: 20,
    perAddress: 2,
    passwordResetPerAddress: 3,
    windowMs: 60_000,
  };

  it('have a per-address budget of their own: sign-ups and sign-ins do not spend it, nor it theirs', async () => {
    const limiter = new MemoryRateLimiter();
    let now = 1_000_000;
    const guard = new SignInGuard(limiter, limits, () => now);
    for (let i = 0; i < 2; i++) await guard.signUp('192.0.2.1');
    for (let i = 0; i < 3; i++) await guard.passwordReset('192.0.2.1');
    const refused = await guard.passwordReset('192.0.2.1').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TollgateError);
    expect(refused).toMatchObject({
      code: 'limits.rate_limited',
      message: 'Too many password-reset requests; try again in 60 seconds',
      headers: { 'Retry-After': '60' },
    });
    await guard.passwordReset('192.0.2.2');
    await guard.begin('someone@example.test', '192.0.2.1');
    now += 60_000;
    await guard.passwordReset('192.0.2.1');
    await limiter.close();
  });
});
