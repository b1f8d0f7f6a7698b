import { ALL_TIME, type UsagePeriods } from '../core/usage-window.js';
import { TollgateError } from '../core/errors.js';
import { unitsToUsd } from '../core/money.js';
import { ACCOUNT_COLUMNS, accountFromRow } from './account-rows.js';
import { applyMigrations } from './apply-migrations.js';
import { GENERATION_COLUMNS, generationFromRow } from './generation-rows.js';
import { KEY_COLUMNS, keyFromRow, keyPatchAssignments, keyToParams } from './key-rows.js';
import { asBigInt, asNumber, asString } from './row-values.js';
import { settleBatch } from './settle-batch.js';
import { SqlByokStore } from './sql-byok-store.js';
import type { NotificationStore, OutboxMessage, OutboxStore, PasswordResetStore } from './mail-types.js';
import { insertOutboxRows } from './outbox-rows.js';
import { SqlNotificationStore } from './sql-notification-store.js';
import { SqlOutageHoldStore } from './sql-outage-hold-store.js';
import { SqlOutboxStore } from './sql-outbox-store.js';
import { SqlPasswordResetStore } from './sql-password-reset-store.js';
import { SqlAccountAuthStore } from './sql-account-auth-store.js';
import type { AccountAuthStore } from './account-auth-store.js';

import { SqlUsageStore } from './sql-usage-store.js';
import type { UsageStore } from './usage-types.js';
import { placeholderTuple, type SqlDriver, type SqlExecutor } from './sql-driver.js';
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
  OutageHoldStore,
  Settlement,
  SettleOutcome,
  Store,
  UsageTotals,
} from './types.js';

const KEY_COUNT = KEY_COLUMNS.split(',').length;
const USAGE_LOOKUP_CHUNK = 100;

function zeroUsage(): KeyUsage {
  const zero = (): UsageTotals => ({ usage: 0n, byokUsage: 0n });
  return { all: zero(), day: zero(), week: zero(), month: zero() };
}

async function findAccount(executor: SqlExecutor, id: string): Promise<AccountRecord | null> {
  const [row] = await executor.all(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`, [id]);
  return row ? accountFromRow(row) : null;
}

export class SqlStore implements Store {
  readonly #driver: SqlDriver;
  readonly byok: ByokStore;
  readonly outbox: OutboxStore;
  readonly notifications: NotificationStore;
  readonly passwordResets: PasswordResetStore;
  readonly accountAuth: AccountAuthStore;
  readonly outageHolds: OutageHoldStore;

  readonly usage: UsageStore;

  constructor(driver: SqlDriver) {
    this.#driver = driver;
    this.byok = new SqlByokStore(driver);
    this.outbox = new SqlOutboxStore(driver);
    this.notifications = new SqlNotificationStore(driver);
    this.passwordResets = new SqlPasswordResetStore(driver);
    this.accountAuth = new SqlAccountAuthStore(driver);
    this.outageHolds = new SqlOutageHoldStore(driver);

    this.usage = new SqlUsageStore(driver);
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.#driver.dialect;
  }

  async migrate(): Promise<void> {
    await applyMigrations(this.#driver);
  }

  async ping(): Promise<void> {
    await this.#driver.all('SELECT 1 AS ok');
  }

  close(): Promise<void> {
    return this.#driver.close();
  }

  async countAccounts(): Promise<number> {
    const [row] = await this.#driver.all('SELECT COUNT(*) AS n FROM accounts');
    return row ? asNumber(row.n) : 0;
  }

  async createAccount(account: NewAccount): Promise<AccountRecord> {
    const [row] = await this.#driver.all(
      'INSERT INTO accounts (id, email, password_hash, created_at, total_credits, total_purchased, total_usage) ' +
        `VALUES (?, ?, ?, ?, 0, 0, 0) ON CONFLICT DO NOTHING RETURNING ${ACCOUNT_COLUMNS}`,
      [account.id, account.email, account.passwordHash, account.createdAt],
    );
    if (!row)
      throw new TollgateError('resource.conflict', 'An account with this e-mail already exists', {
        metadata: { email: account.email },
      });
    return accountFromRow(row);
  }

  getAccount(id: string): Promise<AccountRecord | null> {
    return findAccount(this.#driver, id);
  }

  async addCredits(entry: CreditEntry): Promise<{ account: AccountRecord; applied: boolean }> {
    if (entry.amount < 0n && entry.kind !== 'adjustment') {
      throw new RangeError(`a ${entry.kind} cannot be negative`);
    }
    return this.#driver.transaction(async (tx) => {
      const current = await findAccount(tx, entry.accountId);
      if (!current)
        throw new TollgateError('resource.not_found', 'Account not found', {
          metadata: { account_id: entry.accountId },
        });
      const inserted = await tx.run(
        'INSERT INTO credit_entries (id, account_id, kind, amount, reference, created_at) VALUES (?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (account_id, reference) DO NOTHING',
        [entry.id, entry.accountId, entry.kind, entry.amount, entry.reference, entry.createdAt],
      );
      if (inserted.changes === 0) {
        // A replay, only if it is the same credit: a reference reused for another amount or kind is the
        // operator's mistake (or two credits given one reference), said rather than silently dropped.
        const [earlier] = await tx.all(
          'SELECT kind, amount FROM credit_entries WHERE account_id = ? AND reference = ?',
          [entry.accountId, entry.reference],
        );
        if (earlier && (earlier.kind !== entry.kind || asBigInt(earlier.amount) !== entry.amount))
          throw new TollgateError(
            'resource.conflict',
            `Reference "${entry.reference}" was already used for another credit of this account (${String(earlier.kind)}, ${unitsToUsd(asBigInt(earlier.amount))} USD); a replay must repeat its amount and kind`,
            { metadata: { reference: entry.reference } },
          );
        return { account: current, applied: false };
      }
      const purchased = entry.kind === 'purchase' ? entry.amount : 0n;
      const [row] = await tx.all(
        'UPDATE accounts SET total_credits = total_credits + ?, total_purchased = total_purchased + ? ' +
          `WHERE id = ? RETURNING ${ACCOUNT_COLUMNS}`,
        [entry.amount, purchased, entry.accountId],
      );
      if (!row) throw new Error(`account ${entry.accountId} vanished inside its credit transaction`);
      return { account: accountFromRow(row), applied: true };
    });
  }

  async insertKey(key: KeyRecord): Promise<void> {
    const result = await this.#driver.run(
      `INSERT INTO api_keys (${KEY_COLUMNS}) VALUES ${placeholderTuple(KEY_COUNT)} ON CONFLICT (hash) DO NOTHING`,
      keyToParams(key),
    );
    if (result.changes === 0) throw new TollgateError('resource.conflict', 'A key with this hash already exists');
  }

  async getKey(hash: string): Promise<KeyRecord | null> {
    const [row] = await this.#driver.all(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = ? AND deleted_at IS NULL`, [
      hash,
    ]);
    return row ? keyFromRow(row) : null;
  }

  async listKeys(accountId: string, options: ListKeysOptions): Promise<KeyRecord[]> {
    const rows = await this.#driver.all(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? AND deleted_at IS NULL` +
        (options.includeDisabled ? '' : ' AND disabled = 0') +
        ' ORDER BY created_at DESC, hash DESC LIMIT ? OFFSET ?',
      [accountId, Math.max(0, Math.trunc(options.limit)), Math.max(0, Math.trunc(options.offset))],
    );
    return rows.map(keyFromRow);
  }

  async updateKey(hash: string, patch: KeyPatch, updatedAt: number): Promise<KeyRecord | null> {
    const { assignments, params } = keyPatchAssignments(patch);
    const [row] = await this.#driver.all(
      `UPDATE api_keys SET ${[...assignments, 'updated_at = ?'].join(', ')} WHERE hash = ? AND deleted_at IS NULL ` +
        `RETURNING ${KEY_COLUMNS}`,
      [...params, updatedAt, hash],
    );
    return row ? keyFromRow(row) : null;
  }

  async deleteKey(hash: string, deletedAt: number): Promise<boolean> {
    const result = await this.#driver.run('UPDATE api_keys SET deleted_at = ? WHERE hash = ? AND deleted_at IS NULL', [
      deletedAt,
      hash,
    ]);
    return result.changes > 0;
  }

  markKeyCompromised(
    hash: string,
    at: number,
    notify: (key: KeyRecord, account: AccountRecord) => OutboxMessage[],
  ): Promise<CompromisedKey | null> {
    return this.#driver.transaction(async (tx) => {
      // compromised_at IS NULL: only the first report changes anything (and mails the holder).
      const [row] = await tx.all(
        'UPDATE api_keys SET disabled = 1, compromised_at = ?, updated_at = ? WHERE hash = ? AND deleted_at IS NULL AND compromised_at IS NULL ' +
          `RETURNING ${KEY_COLUMNS}`,
        [at, at, hash],
      );
      if (!row) {
        const [existing] = await tx.all(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = ? AND deleted_at IS NULL`, [
          hash,
        ]);
        return existing ? { key: keyFromRow(existing), newly: false, queued: 0 } : null;
      }
      const key = keyFromRow(row);
      const account = await findAccount(tx, key.accountId);
      const queued = account ? await insertOutboxRows(tx, notify(key, account)) : 0;
      return { key, newly: true, queued };
    });
  }

  async getKeyUsage(hashes: readonly string[], periods: UsagePeriods): Promise<Map<string, KeyUsage>> {
    const usage = new Map<string, KeyUsage>();
    for (const hash of hashes) usage.set(hash, zeroUsage());
    // The four period strings differ by prefix ("all", "d:", "w:", "m:"), so each names one window.
    const windows = new Map<string, keyof KeyUsage>([
      [ALL_TIME, 'all'],
      [periods.day, 'day'],
      [periods.week, 'week'],
      [periods.month, 'month'],
    ]);
    const unique = [...usage.keys()];
    for (let start = 0; start < unique.length; start += USAGE_LOOKUP_CHUNK) {
      const chunk = unique.slice(start, start + USAGE_LOOKUP_CHUNK);
      const rows = await this.#driver.all(
        `SELECT key_hash, period, usage, byok_usage FROM key_usage WHERE key_hash IN ${placeholderTuple(chunk.length)} ` +
          'AND period IN (?, ?, ?, ?)',
        [...chunk, ALL_TIME, periods.day, periods.week, periods.month],
      );
      for (const row of rows) {
        const entry = usage.get(asString(row.key_hash));
        const window = windows.get(asString(row.period));
        if (entry && window) entry[window] = { usage: asBigInt(row.usage), byokUsage: asBigInt(row.byok_usage) };
      }
    }
    return usage;
  }

  async settle(batch: readonly Settlement[]): Promise<SettleOutcome[]> {
    if (batch.length === 0) return [];
    return settleBatch(this.#driver, batch);
  }

  async getGeneration(id: string): Promise<GenerationRecord | null> {
    const [row] = await this.#driver.all(`SELECT ${GENERATION_COLUMNS} FROM generations WHERE id = ?`, [id]);
    return row ? generationFromRow(row) : null;
  }
}
