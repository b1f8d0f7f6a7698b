/**
 * The mail outbox over either SQL driver. Claiming is one statement: on PostgreSQL the candidate row
 * is locked with FOR UPDATE SKIP LOCKED, so concurrent senders in several processes never take the
 * same message; on SQLite the single writer lock serializes claims. A claim is a lease: a sender that
 * dies mid-send loses the message to another sender when the lease expires (at-least-once only across
 * such a crash). A password-reset message keeps its bodies (the link, with a live token) only while it
 * may still be sent: sending or giving it up blanks them, and giving it up also voids its token.
 */
import type { OutboxEntry, OutboxMessage, OutboxStats, OutboxStore } from './mail-types.js';
import { insertOutboxRows, OUTBOX_COLUMNS, outboxFromRow } from './outbox-rows.js';
import { asNullableNumber, asNumber, asString } from './row-values.js';
import type { SqlDriver } from './sql-driver.js';

const UNDELIVERED = 'sent_at IS NULL';
/** A reset message carries a live token: once sent or given up, its bodies are not kept. */
const DROP_RESET_BODIES =
  "text_body = CASE WHEN kind = 'password_reset' THEN '' ELSE text_body END, " +
  "html_body = CASE WHEN kind = 'password_reset' THEN '' ELSE html_body END";
const DUE =
  'sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)';
/**
 * A password reset first: its link lives 30 minutes, and a holder is waiting for it, where a report of
 * a thousand exposed keys queues a thousand notices ahead of it (outside check); then by due time.
 */
const DUE_ORDER = "CASE WHEN kind = 'password_reset' THEN 0 ELSE 1 END, next_attempt_at, id";

export class SqlOutboxStore implements OutboxStore {
  constructor(private readonly driver: SqlDriver) {}

  enqueue(messages: readonly OutboxMessage[]): Promise<number> {
    if (messages.length === 0) return Promise.resolve(0);
    return this.driver.transaction((tx) => insertOutboxRows(tx, messages));
  }

  async claim(owner: string, now: number, leaseUntil: number): Promise<OutboxEntry | null> {
    const lock = this.driver.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
    const [row] = await this.driver.all(
      `UPDATE mail_outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 ` +
        `WHERE id = (SELECT id FROM mail_outbox WHERE ${DUE} ORDER BY ${DUE_ORDER} LIMIT 1${lock}) ` +
        `RETURNING ${OUTBOX_COLUMNS}`,
      [owner, leaseUntil, now, now],
    );
    return row ? outboxFromRow(row) : null;
  }

  async markSent(id: string, owner: string, at: number): Promise<boolean> {
    const result = await this.driver.run(
      `UPDATE mail_outbox SET sent_at = ?, lease_owner = NULL, lease_until = NULL, last_error = NULL, ${DROP_RESET_BODIES} ` +
        'WHERE id = ? AND lease_owner = ? AND sent_at IS NULL',
      [at, id, owner],
    );
    return result.changes > 0;
  }

  async markRetry(id: string, owner: string, nextAttemptAt: number, error: string): Promise<void> {
    await this.driver.run(
      'UPDATE mail_outbox SET next_attempt_at = ?, lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ? AND lease_owner = ? AND sent_at IS NULL',
      [nextAttemptAt, error.slice(0, 500), id, owner],
    );
  }

  markFailed(id: string, owner: string, at: number, error: string): Promise<void> {
    return this.driver.transaction(async (tx) => {
      const [row] = await tx.all(
        `UPDATE mail_outbox SET failed_at = ?, lease_owner = NULL, lease_until = NULL, last_error = ?, ${DROP_RESET_BODIES} ` +
          'WHERE id = ? AND lease_owner = ? AND sent_at IS NULL RETURNING kind',
        [at, error.slice(0, 500), id, owner],
      );
      // Its holder never got the link, so nobody may use it: the token goes with the message.
      if (row && asString(row.kind) === 'password_reset')
        await tx.run('UPDATE password_reset_tokens SET used_at = ? WHERE message_id = ? AND used_at IS NULL', [at, id]);
    });
  }

  async listUndelivered(limit: number, offset: number): Promise<OutboxEntry[]> {
    const rows = await this.driver.all(
      `SELECT ${OUTBOX_COLUMNS} FROM mail_outbox WHERE ${UNDELIVERED} ORDER BY created_at, id LIMIT ? OFFSET ?`,
      [Math.max(0, Math.trunc(limit)), Math.max(0, Math.trunc(offset))],
    );
    return rows.map(outboxFromRow);
  }

  async stats(): Promise<OutboxStats> {
    const [row] = await this.driver.all(
      `SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM mail_outbox WHERE ${UNDELIVERED} AND failed_at IS NULL`,
    );
    return { undelivered: row ? asNumber(row.n) : 0, oldestUndeliveredAt: row ? asNullableNumber(row.oldest) : null };
  }
}
