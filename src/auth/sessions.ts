/**
 * Server-side sessions of account holders. The cookie carries 32 random bytes (base64url); the store
 * keeps only their SHA-256, so a database leak yields no usable session. A session ends at the first
 * of: its absolute expiry, `idle` time without use (rolling — each use pushes it forward, written at
 * most every `renewEvery`), revocation (sign out, sign out everywhere, a password change).
 *
 * The CSRF token is derived from the session token (a one-way hash with its own label), so it is
 * bound to the session, needs no storage, and revealing it reveals nothing about the cookie.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TollgateError } from '../core/errors.js';
import type { AccountAuthStore, SessionRecord } from '../store/account-auth-store.js';
import { FAMILIAR_ADDRESS_MS } from './sign-in-guard.js';

export interface SessionPolicy {
  absoluteMs: number;
  idleMs: number;
  renewEveryMs: number;
}

export interface ActiveSession {
  session: SessionRecord;
  /** When it ends if not used again (the earlier of the absolute and the idle expiry). */
  expiresAt: number;
  csrfToken: string;
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Expired and revoked rows are swept at most this often (per process), on sign-in. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function csrfTokenFor(token: string): string {
  return createHash('sha256').update('tollgate-csrf\0').update(token).digest('base64url');
}

/** Constant-time: the comparison must not tell an attacker how much of a guess was right. */
export function csrfTokenMatches(token: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const expected = Buffer.from(csrfTokenFor(token));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export class SessionService {
  private lastSweep = 0;

  constructor(
    private readonly store: AccountAuthStore,
    private readonly policy: SessionPolicy,
    private readonly now: () => number,
  ) {}

  /**
   * A new session for the account: the cookie token (shown once, to the browser) and its view.
   * `passwordHash` is the hash the caller checked the password against (or just stored): when the
   * account's password changed since, no session is made (`auth.invalid_credentials`).
   */
  async create(accountId: string, passwordHash: string): Promise<{ token: string; active: ActiveSession }> {
    const now = this.now();
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      await this.store.deleteExpired(now, now - FAMILIAR_ADDRESS_MS);
    }
    const token = randomBytes(32).toString('base64url');
    const session: SessionRecord = {
      id: `ses_${randomBytes(12).toString('hex')}`,
      tokenHash: hashSessionToken(token),
      accountId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + this.policy.absoluteMs,
      revokedAt: null,
    };
    // The password this sign-in proved was replaced while it ran: the new one ended every session.
    if (!(await this.store.insertSession(session, passwordHash)))
      throw new TollgateError('auth.invalid_credentials', 'Invalid e-mail or password');
    return { token, active: this.view(session, token) };
  }

  /**
   * The live session a cookie token names, renewed (rolling) when due; `auth.no_session` otherwise.
   * The lookup is by SHA-256 of the token: timing depends on the hash, which a guesser cannot steer.
   */
  async resolve(token: string | undefined): Promise<ActiveSession> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) throw noSession();
    const session = await this.store.getSessionByTokenHash(hashSessionToken(token));
    const now = this.now();
    if (
      !session ||
      session.revokedAt !== null ||
      now >= session.expiresAt ||
      now >= session.lastSeenAt + this.policy.idleMs
    )
      throw noSession();
    if (now - session.lastSeenAt >= this.policy.renewEveryMs) {
      await this.store.touchSession(session.id, now);
      session.lastSeenAt = now;
    }
    return this.view(session, token);
  }

  async revoke(sessionId: string): Promise<void> {
    await this.store.revokeSession(sessionId, this.now());
  }

  /** Ends every session of the account (`exceptId` spared); returns how many ended. */
  async revokeAll(accountId: string, exceptId?: string): Promise<number> {
    return this.store.revokeAccountSessions(accountId, this.now(), exceptId);
  }

  private view(session: SessionRecord, token: string): ActiveSession {
    return {
      session,
      expiresAt: Math.min(session.expiresAt, session.lastSeenAt + this.policy.idleMs),
      csrfToken: csrfTokenFor(token),
    };
  }
}

function noSession(): TollgateError {
  return new TollgateError('auth.no_session', 'Not signed in, or the session has expired');
}
