/**
 * Storage of the account holder's side of authentication: passwords (on the account row), sessions,
 * OAuth apps, authorization codes and the keys issued through them (grants). Secrets are stored only
 * as SHA-256 hashes (session tokens, codes) or scrypt hashes (passwords).
 */
import type { LimitReset } from '../core/usage-window.js';
import type { Units } from '../core/money.js';
import type { AccountRecord, KeyRecord } from './records.js';

export interface SessionRecord {
  id: string;
  /** Lowercase hex SHA-256 of the cookie's token. */
  tokenHash: string;
  accountId: string;
  createdAt: number;
  /** Last recorded use (the rolling expiry counts from it); written at most every few minutes. */
  lastSeenAt: number;
  /** Absolute expiry. */
  expiresAt: number;
  revokedAt: number | null;
}

export type CodeChallengeMethod = 'S256' | 'plain';

export interface OAuthCodeRecord {
  /** Lowercase hex SHA-256 of the code. */
  codeHash: string;
  accountId: string;
  appId: number;
  appName: string;
  callbackUrl: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: CodeChallengeMethod | null;
  keyLabel: string | null;
  /** The issued key's limit, reset and expiry. */
  limit: Units | null;
  limitReset: LimitReset | null;
  keyExpiresAt: number | null;
  createdAt: number;
  /** The code's own expiry (10 minutes). */
  expiresAt: number;
  usedAt: number | null;
}

export interface OAuthApp {
  id: number;
  name: string;
  origin: string;
}

/** A key issued to an app through OAuth, with the app. */
export interface OAuthGrant {
  id: string;
  accountId: string;
  app: OAuthApp;
  createdAt: number;
  key: KeyRecord;
}

export interface AccountAuthStore {
  /** E-mails are stored lowercase; `email` must be too. */
  findAccountByEmail(email: string): Promise<AccountRecord | null>;
  /**
   * Sets the password and voids every reset link sent before (used at `now`), in one transaction: a
   * link mailed earlier must not override a password chosen since. False when the account does not exist.
   */
  setPassword(accountId: string, passwordHash: string, now: number): Promise<boolean>;
  /** Sum of the account's `grant` credit entries. */
  totalGranted(accountId: string): Promise<Units>;

  /**
   * Replaces the password hash only while it is still `oldHash` (a sign-in upgrading the hash of the
   * password it just checked must not undo a password set meanwhile); reset links stay as they are.
   */
  rehashPassword(accountId: string, oldHash: string, newHash: string): Promise<boolean>;
  /**
   * Inserts the session only while the account's password hash is still `passwordHash` — the one the
   * sign-in checked — taking the account row's lock first, so a password set (reset, change, operator)
   * either comes after and ends it, or came before and it is not created. False: not created.
   */
  insertSession(session: SessionRecord, passwordHash: string): Promise<boolean>;
  getSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null>;
  touchSession(id: string, lastSeenAt: number): Promise<void>;
  /** False when it was already revoked or does not exist. */
  revokeSession(id: string, revokedAt: number): Promise<boolean>;
  /**
   * Revokes every live session of the account except `exceptId`, and voids its OAuth codes not yet
   * exchanged (approved in those sessions, or by a key minutes ago); returns how many sessions.
   */
  revokeAccountSessions(accountId: string, revokedAt: number, exceptId?: string): Promise<number>;
  /**
   * Notes a successful sign-in of the account from a client address (`addressTag`: its
   * `familiarAddressTag`, never the address): the address becomes familiar (auth/sign-in-guard.ts).
   */
  rememberSignInAddress(accountId: string, addressTag: string, now: number): Promise<void>;
  /** Whether the account signed in successfully from that address since `since`. */
  signedInFrom(accountId: string, addressTag: string, since: number): Promise<boolean>;
  /**
   * Deletes sessions and codes that can no longer be used, and sign-in addresses not used since
   * `addressesBefore` (housekeeping).
   */
  deleteExpired(now: number, addressesBefore?: number): Promise<void>;

  /** The app's integer id, created on first sight of the origin. */
  ensureOAuthApp(origin: string, now: number): Promise<number>;
  insertOAuthCode(code: OAuthCodeRecord): Promise<void>;
  getOAuthCode(codeHash: string): Promise<OAuthCodeRecord | null>;
  /**
   * Atomically marks the code used (only if unused and unexpired at `now`), inserts the key and the
   * grant. Returns false — and changes nothing — when the code was already used or expired.
   */
  redeemOAuthCode(codeHash: string, now: number, key: KeyRecord, grantId: string): Promise<boolean>;
  /** Live grants (their key not deleted), newest first. */
  listGrants(accountId: string): Promise<OAuthGrant[]>;
  getGrant(id: string): Promise<OAuthGrant | null>;
  /** The app of each key issued through OAuth (keys without one are absent). */
  appsOfKeys(keyHashes: readonly string[]): Promise<Map<string, OAuthApp>>;
}
