/**
 * Brute-force protection of sign-in, with the platform's rate-limit algorithm and store (in-process,
 * or Redis for a fleet). Three budgets of failed sign-ins, each per window:
 * - per e-mail address and client address (`per_account_and_address`): one source guessing one
 *   account is stopped after a handful — without locking the account for anyone else, so nobody can
 *   lock an account holder out by typing wrong passwords for their e-mail;
 * - per e-mail address from every client address together (`per_account`, larger): guessing spread
 *   over many addresses is still bounded;
 * - per client address whatever the e-mails (`per_address`): a password spray from one source.
 * Sign-up and password-reset requests take a per-address slot of budgets of their own, for good.
 * E-mails count whether or not an account has them, so the limits reveal nothing. Client addresses
 * count as their subject (an IPv6 address as its /64: `limits/address-subject.ts`).
 *
 * The account-wide budget could still be spent by guessing from a few addresses, locking the holder
 * out everywhere; so it does not apply from a *familiar* address — one the account signed in from
 * successfully within FAMILIAR_ADDRESS_MS (remembered as `familiarAddressTag`, never the address).
 * There only the per-address budgets count, and those an attacker elsewhere cannot spend.
 *
 * Every attempt takes a slot BEFORE the password is checked, and a successful one gives it back: so
 * parallel guesses cannot all pass a check that only counted finished failures. The net effect is
 * "N failed sign-ins per window" — per password: the two per-account budgets start afresh when the
 * holder sets a new one (the e-mailed reset link proves the mailbox; a dashboard change the session).
 */
import { createHash } from 'node:crypto';
import { TollgateError } from '../core/errors.js';
import { addressSubject } from '../limits/address-subject.js';
import type { RateLimiter, RateRule } from '../limits/rate-limit.js';

export interface SignInLimits {
  perAccountAndAddress: number;
  perAccount: number;
  perAddress: number;
  /** Password-reset requests per client address (each may queue a mail), whatever the e-mails. */
  passwordResetPerAddress: number;
  windowMs: number;
}

/** How long a successful sign-in keeps its client address familiar to the account. */
export const FAMILIAR_ADDRESS_MS = 30 * 86_400_000;

/**
 * How a familiar address is stored: 20 bits of a SHA-256 of the account and the address's subject.
 * Enough to tell the holder's few addresses from a stranger's (one stranger in a million matches),
 * too few to give the address back to whoever reads the table: some 4,000 IPv4 addresses share each
 * value, and the same address has another value for another account.
 */
export function familiarAddressTag(accountId: string, addressSubject: string): string {
  return createHash('sha256').update(`${accountId}\n${addressSubject}`).digest('hex').slice(0, 5);
}

export interface SignInAttempt {
  /** The client address's subject (`limits/address-subject.ts`), for `familiarAddressTag`. */
  readonly addressSubject: string;
  /** Gives the slots back (the attempt succeeded). */
  succeeded(): Promise<void>;
}

export class SignInGuard {
  private readonly pairRule: RateRule;
  private readonly accountRule: RateRule;
  private readonly addressRule: RateRule;
  private readonly signUpRule: RateRule;
  private readonly passwordResetRule: RateRule;

  constructor(
    private readonly limiter: RateLimiter,
    limits: SignInLimits,
    private readonly now: () => number,
  ) {
    this.pairRule = {
      name: 'sign_in_per_account_and_address',
      kind: 'sliding',
      limit: limits.perAccountAndAddress,
      windowMs: limits.windowMs,
    };
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
    this.passwordResetRule = {
      name: 'password_reset_per_address',
      kind: 'sliding',
      limit: limits.passwordResetPerAddress,
      windowMs: limits.windowMs,
    };
  }

  /**
   * One sign-up takes a slot of its client address's budget for good (an account made, or a password
   * hashed for nothing): a script cannot mint accounts, or scrypt runs, at the gateway's full rate.
   */
  async signUp(clientAddress: string): Promise<void> {
    const subject = `signup-ip:${addressSubject(clientAddress)}`;
    const result = await this.limiter.consume(subject, [this.signUpRule], this.now());
    if (!result.allowed) throw throttled(result.retryAfterMs, 'sign-up attempts');
  }

  /**
   * One password-reset request takes a slot of its client address's budget for good, before the
   * e-mail is looked up — known or not, so the answer tells nothing: one source cannot have the
   * gateway mail every holder whose address it knows (flooding them, and burning the SMTP sender's
   * reputation that exposed-key notices depend on).
   */
  async passwordReset(clientAddress: string): Promise<void> {
    const subject = `reset-ip:${addressSubject(clientAddress)}`;
    const result = await this.limiter.consume(subject, [this.passwordResetRule], this.now());
    if (!result.allowed) throw throttled(result.retryAfterMs, 'password-reset requests');
  }

  /**
   * Takes one slot of each budget, or throws 429 with `Retry-After` naming when a slot frees. With
   * `familiar` (asked only when the account-wide budget is spent): whether the account signed in
   * from this address lately, which lets the attempt through that budget.
   */
  async begin(
    email: string,
    clientAddress: string,
    familiar?: (addressSubject: string) => Promise<boolean>,
    credential: string | null = null,
  ): Promise<SignInAttempt> {
    const now = this.now();
    // The e-mail is hashed: subjects may end up as Redis keys, and keys should not carry addresses.
    // The account's budgets belong to its current password (`credentialTag`): a holder locked out by
    // failed guesses who sets a new one through the e-mailed reset link can sign in with it at once.
    const emailHash = `${createHash('sha256').update(email).digest('hex').slice(0, 32)}:${credentialTag(credential)}`;
    const address = addressSubject(clientAddress);
    const taken: Array<[subject: string, rule: RateRule]> = [];
    const giveBack = async () => {
      for (const [subject, rule] of taken) await this.limiter.refund(subject, [rule], now);
    };
    try {
      for (const [subject, rule] of [
        [`signin-ip:${address}`, this.addressRule],
        [`signin-pair:${emailHash}:${address}`, this.pairRule],
        [`signin:${emailHash}`, this.accountRule],
      ] as const) {
        const result = await this.limiter.consume(subject, [rule], now);
        if (!result.allowed) {
          if (rule === this.accountRule && familiar !== undefined && (await familiar(address))) continue;
          throw throttled(result.retryAfterMs);
        }
        taken.push([subject, rule]);
      }
    } catch (error) {
      // Refused by one budget, or the limiter failed part-way (a Redis blip: 503): no password is
      // checked, so the slots taken so far go back — best effort, the limiter may be failing still.
      await giveBack().catch(() => undefined);
      throw error;
    }
    return { addressSubject: address, succeeded: giveBack };
  }
}

/**
 * A short fingerprint of the account's password hash (`-` for none: an unknown e-mail), so the
 * per-account budgets start afresh when the password changes. Attempts on an unknown e-mail share
 * one budget as before, and the fingerprint tells whoever reads Redis nothing about the password.
 */
export function credentialTag(passwordHash: string | null): string {
  return passwordHash ? createHash('sha256').update(passwordHash).digest('hex').slice(0, 12) : '-';
}

function throttled(retryAfterMs: number, what = 'sign-in attempts'): TollgateError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new TollgateError('limits.rate_limited', `Too many ${what}; try again in ${waitInWords(seconds)}`, {
    headers: { 'Retry-After': String(seconds) },
    metadata: { error_type: 'rate_limit_exceeded' },
  });
}

/** A wait as people say it: "45 seconds", "1 minute", "15 minutes" (rounded up: never sooner than true). */
export function waitInWords(seconds: number): string {
  if (seconds < 90) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}
