/** Row mapping of `mail_outbox`, and the insert every transaction that causes a message uses. */
import type { OutboxEntry, OutboxMessage } from './mail-types.js';
import { asNullableNumber, asNullableString, asNumber, asString } from './row-values.js';
import { placeholderTuple, type SqlExecutor, type SqlRow } from './sql-driver.js';

export const OUTBOX_COLUMNS =
  'id, kind, dedupe_key, account_id, recipient, subject, text_body, html_body, message_id, created_at, ' +
  'attempts, next_attempt_at, sent_at, failed_at, last_error';

const INSERT_COLUMNS =
  'id, kind, dedupe_key, account_id, recipient, subject, text_body, html_body, message_id, created_at, next_attempt_at';
const INSERT_WIDTH = INSERT_COLUMNS.split(',').length;

export function outboxFromRow(row: SqlRow): OutboxEntry {
  return {
    id: asString(row.id),
    kind: asString(row.kind) as OutboxEntry['kind'],
    dedupeKey: asNullableString(row.dedupe_key),
    accountId: asNullableString(row.account_id),
    recipient: asString(row.recipient),
    subject: asString(row.subject),
    text: asString(row.text_body),
    html: asString(row.html_body),
    messageId: asString(row.message_id),
    createdAt: asNumber(row.created_at),
    attempts: asNumber(row.attempts),
    nextAttemptAt: asNumber(row.next_attempt_at),
    sentAt: asNullableNumber(row.sent_at),
    failedAt: asNullableNumber(row.failed_at),
    lastError: asNullableString(row.last_error),
  };
}

/**
 * Queues messages through `executor` — the driver, or a transaction that also holds the state change
 * causing them, so the change and its mail commit together or not at all. A dedupe key seen before
 * skips its message. Returns how many were queued.
 */
export async function insertOutboxRows(executor: SqlExecutor, messages: readonly OutboxMessage[]): Promise<number> {
  let queued = 0;
  for (const m of messages) {
    const result = await executor.run(
      `INSERT INTO mail_outbox (${INSERT_COLUMNS}) VALUES ${placeholderTuple(INSERT_WIDTH)} ON CONFLICT DO NOTHING`,
      [
        m.id,
        m.kind,
        m.dedupeKey,
        m.accountId,
        m.recipient,
        m.subject,
        m.text,
        m.html,
        m.messageId,
        m.createdAt,
        m.createdAt,
      ],
    );
    queued += result.changes;
  }
  return queued;
}
