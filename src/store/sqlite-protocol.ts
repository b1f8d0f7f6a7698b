/**
 * Messages between the embedded store's driver (store/sqlite-driver.ts, on the event loop) and the
 * thread that owns the SQLite connection (store/sqlite-thread.js). One request, one reply, in order.
 */
import type { SqlParam, SqlRow, SqlStatement } from './sql-driver.js';

export interface SqliteThreadOptions {
  path: string;
  /** Milliseconds a writer waits for another process's lock. */
  busyTimeoutMs: number;
}

/**
 * `tx`: the statement belongs to the caller's transaction, and fails if none is open (BEGIN is sent
 * without waiting for its reply; should it fail, what follows must not run outside a transaction).
 */
export type SqliteRequest =
  | { id: number; op: 'all' | 'run'; sql: string; params: readonly SqlParam[]; tx: boolean }
  | { id: number; op: 'exec'; sql: string; tx: boolean }
  /** BEGIN, the statements, COMMIT; rolled back (`results: null`) when a statement's row count is not the one expected. */
  | { id: number; op: 'batch'; statements: readonly SqlStatement[] }
  /** Rolls back the open transaction, if any; never fails. */
  | { id: number; op: 'rollback' }
  | { id: number; op: 'close' };

/** The thread's first message: whether it opened the database (`id` 0, before any reply). */
export const OPENED_ID = 0;

export type SqliteReply =
  | { id: number; ok: true; rows: SqlRow[] }
  | { id: number; ok: true; changes: number }
  | { id: number; ok: true; results: SqlRow[][] | null }
  | { id: number; ok: true }
  /** `code` is SQLite's (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_UNIQUE`…) when the error had one. */
  | { id: number; ok: false; message: string; code: string | null };
