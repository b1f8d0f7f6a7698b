/**
 * Password-reset tokens (migration 5) over either SQL driver. Redeeming touches the account's
 * password and the sessions table of the account holder's side (migration 3) in the same transaction,
 * so a reset either fully happens (new password, every session ended, other links void) or not at all.
 * Each token names its message (`message_id`): the outbox voids it when it gives that message up.
 */
import type { OutboxMessage, PasswordResetStore, PasswordResetToken } from './mail-types.js';
import { insertOutboxRows } from './outbox-rows.js';
import { asString } from './row-values.js';
import type { SqlDriver } from './sql-driver.js';

export class SqlPasswordResetStore implements PasswordResetStore {
  constructor(private readonly driver: SqlDriver) {}

  create(token: PasswordResetToken, message: OutboxMessage, minIntervalMs = 0): Promise<boolean> {
    return this.driver.transaction(async (tx) => {
      if (minIntervalMs > 0) {
        // The account's row lock puts concurrent requests for one account in line (PostgreSQL; SQLite
        // runs one writer at a time), so the look-up below sees any token the other one created.
        const locked = await tx.run('UPDATE accounts SET id = id WHERE id = ?', [token.accountId]);
        if (locked.changes === 0) return false;
        const recent = await tx.all(
          'SELECT 1 AS recent FROM password_reset_tokens WHERE account_id = ? AND created_at > ? LIMIT 1',
          [token.accountId, token.createdAt - minIntervalMs],
        );
        if (recent.length > 0) return false;
      }
      if ((await insertOutboxRows(tx, [message])) === 0) return false;
      await tx.run(
        'INSERT INTO password_reset_tokens (token_hash, account_id, created_at, expires_at, message_id) VALUES (?, ?, ?, ?, ?)',
        [token.tokenHash, token.accountId, token.createdAt, token.expiresAt, message.id],
      );
      return true;
    });
  }

  redeem(tokenHash: string, now: number, passwordHash: string): Promise<string | null> {
    return this.driver.transaction(async (tx) => {
      const [row] = await tx.all(
        'UPDATE password_reset_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING account_id',
        [now, tokenHash, now],
      );
      if (!row) return null;
      const accountId = asString(row.account_id);
      const updated = await tx.run('UPDATE accounts SET password_hash = ? WHERE id = ?', [passwordHash, accountId]);
      if (updated.changes === 0) return null;
      await tx.run('UPDATE password_reset_tokens SET used_at = ? WHERE account_id = ? AND used_at IS NULL', [
        now,
        accountId,
      ]);
      await tx.run('UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL', [now, accountId]);
      await tx.run('UPDATE oauth_codes SET used_at = ? WHERE account_id = ? AND used_at IS NULL', [now, accountId]);
      return accountId;
    });
  }

  async isRedeemable(tokenHash: string, now: number): Promise<boolean> {
    const rows = await this.driver.all(
      'SELECT 1 AS live FROM password_reset_tokens WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?',
      [tokenHash, now],
    );
    return rows.length > 0;
  }
}
