/** Account holders' notification settings, the key-expiry query and the last top-up, over either SQL driver. */
import {
  DEFAULT_NOTIFICATION_SETTINGS,
  type ExpiringKey,
  type NotificationSettings,
  type NotificationSettingsPatch,
  type NotificationStore,
} from './mail-types.js';
import { asBoolean, asNullableBigInt, asNumber, asString } from './row-values.js';
import type { SqlDriver, SqlRow } from './sql-driver.js';

const COLUMNS = 'low_balance_enabled, low_balance_threshold, key_limit_enabled, key_expiry_enabled';

function settingsFromRow(row: SqlRow): NotificationSettings {
  return {
    lowBalanceEnabled: asBoolean(row.low_balance_enabled),
    lowBalanceThreshold: asNullableBigInt(row.low_balance_threshold),
    keyLimitEnabled: asBoolean(row.key_limit_enabled),
    keyExpiryEnabled: asBoolean(row.key_expiry_enabled),
  };
}

export class SqlNotificationStore implements NotificationStore {
  constructor(private readonly driver: SqlDriver) {}

  async settings(accountId: string): Promise<NotificationSettings> {
    const [row] = await this.driver.all(`SELECT ${COLUMNS} FROM notification_settings WHERE account_id = ?`, [
      accountId,
    ]);
    return row ? settingsFromRow(row) : { ...DEFAULT_NOTIFICATION_SETTINGS };
  }

  updateSettings(accountId: string, patch: NotificationSettingsPatch, at: number): Promise<NotificationSettings> {
    return this.driver.transaction(async (tx) => {
      const [row] = await tx.all(`SELECT ${COLUMNS} FROM notification_settings WHERE account_id = ?`, [accountId]);
      const next: NotificationSettings = { ...(row ? settingsFromRow(row) : DEFAULT_NOTIFICATION_SETTINGS), ...patch };
      await tx.run(
        `INSERT INTO notification_settings (account_id, ${COLUMNS}, updated_at) VALUES (?, ?, ?, ?, ?, ?) ` +
          'ON CONFLICT (account_id) DO UPDATE SET low_balance_enabled = excluded.low_balance_enabled, ' +
          'low_balance_threshold = excluded.low_balance_threshold, key_limit_enabled = excluded.key_limit_enabled, ' +
          'key_expiry_enabled = excluded.key_expiry_enabled, updated_at = excluded.updated_at',
        [accountId, next.lowBalanceEnabled, next.lowBalanceThreshold, next.keyLimitEnabled, next.keyExpiryEnabled, at],
      );
      return next;
    });
  }

  async lastTopUp(accountId: string): Promise<string | null> {
    const [row] = await this.driver.all(
      'SELECT id FROM credit_entries WHERE account_id = ? AND amount > 0 ORDER BY created_at DESC, id DESC LIMIT 1',
      [accountId],
    );
    return row ? asString(row.id) : null;
  }

  async expiringKeys(from: number, to: number): Promise<ExpiringKey[]> {
    const rows = await this.driver.all(
      'SELECT k.hash, k.account_id, k.name, k.label, k.expires_at, a.email FROM api_keys k ' +
        'JOIN accounts a ON a.id = k.account_id ' +
        'LEFT JOIN notification_settings s ON s.account_id = k.account_id ' +
        'WHERE k.expires_at > ? AND k.expires_at <= ? AND k.deleted_at IS NULL AND k.disabled = 0 ' +
        'AND (s.key_expiry_enabled IS NULL OR s.key_expiry_enabled = 1) ORDER BY k.expires_at, k.hash',
      [from, to],
    );
    return rows.map((row) => ({
      hash: asString(row.hash),
      accountId: asString(row.account_id),
      name: asString(row.name),
      label: asString(row.label),
      expiresAt: asNumber(row.expires_at),
      email: asString(row.email),
    }));
  }
}
