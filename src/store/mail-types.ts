/**
 * Storage contract of the mail outbox and the account holders' notification settings (migration 5).
 * Timestamps are epoch milliseconds; money is bigint units (1e-9 USD).
 */
import type { Units } from '../core/money.js';
import type { SqlExecutor } from './sql-driver.js';

export type MailKind =
  'key_compromised' | 'key_in_request' | 'low_balance' | 'key_limit' | 'key_expiry' | 'password_reset';

/** A message as queued: rendered once, so a retry sends exactly the same bytes. */
export interface OutboxMessage {
  id: string;
  kind: MailKind;
  /**
   * At most one message per dedupe key, ever (e.g. `low_balance:<account>:<window>`): the "once per
   * window" of notifications is this unique column. Null: no deduplication.
   */
  dedupeKey: string | null;
  accountId: string | null;
  recipient: string;
  subject: string;
  text: string;
  html: string;
  /** The RFC 5322 Message-ID, fixed at queueing time: a resend after a crash carries the same one. */
  messageId: string;
  createdAt: number;
}

export interface OutboxEntry extends OutboxMessage {
  attempts: number;
  nextAttemptAt: number;
  sentAt: number | null;
  failedAt: number | null;
  lastError: string | null;
}

export interface OutboxStats {
  undelivered: number;
  /** created_at of the oldest message neither sent nor given up; null when there is none. */
  oldestUndeliveredAt: number | null;
}

export interface OutboxStore {
  /** Inserts the messages; a message whose dedupe key already exists is skipped. Returns how many were queued. */
  enqueue(messages: readonly OutboxMessage[]): Promise<number>;
  /**
   * Leases the next due message to `owner` until `leaseUntil` (no other claimer gets it meanwhile;
   * PostgreSQL: FOR UPDATE SKIP LOCKED) and counts the attempt. Null when nothing is due.
   */
  claim(owner: string, now: number, leaseUntil: number): Promise<OutboxEntry | null>;
  /**
   * False when the lease was lost (another sender took the message over after it expired). A
   * password-reset message loses its bodies (the link carries a live token).
   */
  markSent(id: string, owner: string, at: number): Promise<boolean>;
  /** Releases the lease; the message is due again at `nextAttemptAt`. */
  markRetry(id: string, owner: string, nextAttemptAt: number, error: string): Promise<void>;
  /**
   * Gives the message up (it stays listed as undelivered). A password-reset message loses its bodies
   * and, in the same transaction, its token is voided: the holder never got the link.
   */
  markFailed(id: string, owner: string, at: number, error: string): Promise<void>;
  /** Messages not sent yet (pending and given up), oldest first. */
  listUndelivered(limit: number, offset: number): Promise<OutboxEntry[]>;
  stats(): Promise<OutboxStats>;
}

export interface NotificationSettings {
  lowBalanceEnabled: boolean;
  /** Null: the configured default. */
  lowBalanceThreshold: Units | null;
  keyLimitEnabled: boolean;
  keyExpiryEnabled: boolean;
}

export type NotificationSettingsPatch = Partial<NotificationSettings>;

export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = Object.freeze({
  lowBalanceEnabled: true,
  lowBalanceThreshold: null,
  keyLimitEnabled: true,
  keyExpiryEnabled: true,
});

/** A live key expiring soon, with what its announcement needs. */
export interface ExpiringKey {
  hash: string;
  accountId: string;
  name: string;
  label: string;
  expiresAt: number;
  email: string;
}

export interface NotificationStore {
  /** The account's settings, defaults when it never changed them. */
  settings(accountId: string): Promise<NotificationSettings>;
  updateSettings(accountId: string, patch: NotificationSettingsPatch, at: number): Promise<NotificationSettings>;
  /** Live (not deleted, not disabled) keys with `from < expires_at <= to` whose holder wants expiry notices. */
  expiringKeys(from: number, to: number): Promise<ExpiringKey[]>;
  /**
   * The id of the account's latest credit entry that added credits (a purchase, a grant, an upward
   * adjustment), or null: what opens a new low-balance window.
   */
  lastTopUp(accountId: string): Promise<string | null>;
}

/** Inserting outbox rows inside a transaction another store opened (the state change that causes the mail). */
export type OutboxWriter = (executor: SqlExecutor, messages: readonly OutboxMessage[]) => Promise<number>;

/** A one-time password-reset token; only its SHA-256 hash is stored, with the id of the message carrying it. */
export interface PasswordResetToken {
  tokenHash: string;
  accountId: string;
  createdAt: number;
  expiresAt: number;
}

export interface PasswordResetStore {
  /**
   * Stores the token, linked to `message` (giving the message up voids the token), and queues the
   * message in one transaction — unless the account has a token created less than `minIntervalMs`
   * before this one (one reset mail per account per interval: the last `minIntervalMs`, whatever the
   * clock says), or a message with the same dedupe key exists already: then nothing is stored and
   * false is returned.
   */
  create(token: PasswordResetToken, message: OutboxMessage, minIntervalMs?: number): Promise<boolean>;
  /**
   * Uses the token (once, before its expiry): sets the password hash, ends every session of the
   * account and voids its other reset tokens, in one transaction. The account id, or null when the
   * token is unknown, used or expired (nothing changes then).
   */
  redeem(tokenHash: string, now: number, passwordHash: string): Promise<string | null>;
  /** Whether the token could be redeemed at `now` (known, unused, unexpired): a read, nothing changes. */
  isRedeemable(tokenHash: string, now: number): Promise<boolean>;
}
