/**
 * The storage contract. Domain code sees only these interfaces; `store/sql-store.ts` implements them
 * over either SQL driver (embedded SQLite through libsql, or PostgreSQL), and one contract suite
 * (`test/store.contract.test.ts`) runs against both.
 *
 * Money fields are bigint units (1e-9 USD). Timestamps are epoch milliseconds.
 */
import type { UsagePeriods } from '../core/usage-window.js';
import type {
  AccountRecord,
  ByokStore,
  CompromisedKey,
  CreditEntry,
  GenerationRecord,
  KeyPatch,
  KeyRecord,
  KeyUsage,
  ListKeysOptions,
  NewAccount,
  SettleOutcome,
  Settlement,
} from './records.js';
import type { NotificationStore, OutboxMessage, OutboxStore, PasswordResetStore } from './mail-types.js';
import type { AccountAuthStore } from './account-auth-store.js';

import type { UsageStore } from './usage-types.js';

export * from './records.js';

/**
 * What each gateway process held (in 1e-9 USD units, per subject: `a:<account id>`, `k:<key hash>`)
 * when the shared hold store (Redis) stopped being trusted — the holds only Redis knew, which every
 * process's share of the outage leaves out (billing/credit-gate.ts; docs/architecture.md "Redis outages").
 */
export interface OutageHoldStore {
  /** Replaces this process's report with `holds` (an empty map still says it reported), taken at `at`. */
  report(processId: string, at: number, holds: ReadonlyMap<string, bigint>): Promise<void>;
  /** The other processes that reported at or after `since`, and the sum of their holds on each of `subjects`. */
  others(processId: string, since: number, subjects: readonly string[]): Promise<OtherProcessesHolds>;
  /**
   * This process's outage ended: it no longer counts as having reported (a later outage waits for its
   * new report), while its holds still count for processes that are still in that outage.
   */
  end(processId: string): Promise<void>;
  /** Drops this process's report (it is closing). */
  withdraw(processId: string): Promise<void>;
}

export interface OtherProcessesHolds {
  reporters: number;
  /** Subjects without holds are absent. */
  held: Map<string, bigint>;
}

export interface Store {
  /** BYOK provider keys. */
  readonly byok: ByokStore;
  /** Outgoing mail (migration 5). */
  readonly outbox: OutboxStore;
  /** Account holders' notification settings. */
  readonly notifications: NotificationStore;
  /** One-time password-reset tokens (stored hashed). */
  readonly passwordResets: PasswordResetStore;
  /** Passwords, sessions, OAuth codes and grants (account holders). */
  readonly accountAuth: AccountAuthStore;
  /** The processes' holds at the start of a Redis outage (migration 9). */
  readonly outageHolds: OutageHoldStore;

  /** Usage rollups (written by `settle`) and the account's recent history, for the dashboard, /activity and rankings. */
  readonly usage: UsageStore;
  readonly dialect: 'sqlite' | 'postgres';
  /** Applies pending migrations; safe when several processes start together. */
  migrate(): Promise<void>;
  /** Cheap round trip proving the store answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;

  countAccounts(): Promise<number>;
  /** Throws TollgateError('resource.conflict') when the e-mail is taken. */
  createAccount(account: NewAccount): Promise<AccountRecord>;
  getAccount(id: string): Promise<AccountRecord | null>;

  /**
   * Records a credit entry and updates the account's totals in one transaction. Idempotent on
   * (accountId, reference): a replay changes nothing and returns applied=false. Throws
   * TollgateError('resource.not_found') for an unknown account, and 'resource.conflict' when the
   * reference was used for a credit of another amount or kind.
   */
  addCredits(entry: CreditEntry): Promise<{ account: AccountRecord; applied: boolean }>;

  insertKey(key: KeyRecord): Promise<void>;
  /** Deleted keys are never returned. */
  getKey(hash: string): Promise<KeyRecord | null>;
  /** Newest first. */
  listKeys(accountId: string, options: ListKeysOptions): Promise<KeyRecord[]>;
  /** Returns the updated key, or null when it does not exist (or was deleted). */
  updateKey(hash: string, patch: KeyPatch, updatedAt: number): Promise<KeyRecord | null>;
  /** Soft delete: the hash can never authenticate again. Returns false when it did not exist. */
  deleteKey(hash: string, deletedAt: number): Promise<boolean>;

  /**
   * Disables the key as compromised (never re-enabled) and, in the same transaction, queues the
   * messages `notify` composes for its holder — only the first time: a key already reported is
   * returned unchanged with `newly: false`. Null for an unknown or deleted key.
   */
  markKeyCompromised(
    hash: string,
    at: number,
    notify: (key: KeyRecord, account: AccountRecord) => OutboxMessage[],
  ): Promise<CompromisedKey | null>;

  getKeyUsage(hashes: readonly string[], periods: UsagePeriods): Promise<Map<string, KeyUsage>>;

  /**
   * Group commit: every settlement of the batch in ONE transaction — generation row, the account's
   * total_usage and the key's usage counters (all, day, week, month; `byokUsage` too when BYOK).
   * Idempotent on the generation id.
   */
  settle(batch: readonly Settlement[]): Promise<SettleOutcome[]>;
  getGeneration(id: string): Promise<GenerationRecord | null>;
}
