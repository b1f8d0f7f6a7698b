/**
 * Brute-force protection of sign-in: per e-mail address (whether or not an account has it, so the
 * limit reveals nothing) and per client address, with the platform's rate-limit algorithm and store
 * (in-process, or Redis for a fleet).
 *
 * Every attempt takes a slot BEFORE the password is checked, and a successful one gives it back: so
 * parallel guesses cannot all pass a check that only counted finished failures. The net effect is
 * "N failed sign-ins per window".
 */
import { createHash } from 'node:crypto';
import { TollgateError } from '../core/errors.js';
import type { RateLimiter, RateRule } from '../limits/rate-limit.js';

export interface SignInLimits {
  perAccount: number;
  perAddress: number;
  windowMs: number;
}

export interface SignInAttempt {
  /** Gives the slots back (the attempt succeeded). */
  succeeded(): Promise<void>;
}

export class SignInGuard {
  private readonly accountRule: RateRule;
  private readonly addressRule: RateRule;
  private readonly signUpRule: RateRule;

  constructor(
    private readonly limiter: RateLimiter,
    limits: SignInLimits,
    private readonly now: () => number,
  ) {
    this.accountRule = {
      name: 'sign_in_per_account',
      kind: 'sliding',
      limit: limits.perAccount,
      windowMs: limits.windowMs,
    };
    this.addressRule = {
      name: 'sign_in_per_address',
      kind: 'sliding',
      limit: limits.perAddress,
      windowMs: limits.windowMs,
    };
    this.signUpRule = {
      name: 'sign_up_per_address',
      kind: 'sliding',
      limit: limits.perAddress,
      windowMs: limits.windowMs,
    };
  }

  /**
   * One sign-up takes a slot of its client address's budget for good (an account made, or a password
   * hashed for nothing): a script cannot mint accounts, or scrypt runs, at the gateway's full rate.
   */
  async signUp(clientAddress: string): Promise<void> {
    const result = await this.limiter.consume(`signup-ip:${clientAddress}`, [this.signUpRule], this.now());
    if (!result.allowed) throw throttled(result.retryAfterMs, 'sign-up');
  }

  /** Takes one slot per subject, or throws 429 with `Retry-After` naming when a slot frees. */
  async begin(email: string, clientAddress: string): Promise<SignInAttempt> {
    const now = this.now();
    // The e-mail is hashed: subjects may end up as Redis keys, and keys should not carry addresses.
    const accountSubject = `signin:${createHash('sha256').update(email).digest('hex').slice(0, 32)}`;
    const addressSubject = `signin-ip:${clientAddress}`;
    const byAddress = await this.limiter.consume(addressSubject, [this.addressRule], now);
    if (!byAddress.allowed) throw throttled(byAddress.retryAfterMs);
    const byAccount = await this.limiter.consume(accountSubject, [this.accountRule], now);
    if (!byAccount.allowed) {
      await this.limiter.refund(addressSubject, [this.addressRule], now);
      throw throttled(byAccount.retryAfterMs);
    }
    return {
      succeeded: async () => {
        await this.limiter.refund(accountSubject, [this.accountRule], now);
        await this.limiter.refund(addressSubject, [this.addressRule], now);
      },
    };
  }
}

function throttled(retryAfterMs: number, what = 'sign-in'): TollgateError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new TollgateError('limits.rate_limited', `Too many ${what} attempts; try again in ${seconds} seconds`, {
    headers: { 'Retry-After': String(seconds) },
    metadata: { error_type: 'rate_limit_exceeded' },
  });
}
