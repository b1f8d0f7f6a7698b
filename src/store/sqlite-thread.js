// @ts-check
/**
 * The embedded store's SQLite connection, on a thread of its own (store/sqlite-driver.ts explains
 * why): it runs each request it receives, in order, and replies. libsql's API is synchronous, so a
 * statement, and above all a COMMIT waiting for its fsync, blocks only this thread.
 *
 * Plain JavaScript (type-checked through JSDoc): a worker thread is loaded by Node itself, in the
 * built gateway and under the test runner alike, so its file must run without compilation.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'libsql';

/** @typedef {import('./sqlite-protocol.js').SqliteRequest} SqliteRequest */
/** @typedef {import('./sqlite-protocol.js').SqliteReply} SqliteReply */
/** @typedef {import('./sqlite-protocol.js').SqliteThreadOptions} SqliteThreadOptions */
/** @typedef {import('./sql-driver.js').SqlParam} SqlParam */
/** @typedef {import('./sql-driver.js').SqlRow} SqlRow */
/** @typedef {import('./sql-driver.js').SqlStatement} SqlStatement */

/** The id of the first message, which says whether the database opened (`OPENED_ID` in sqlite-protocol.ts). */
const OPENED_ID = 0;

const port = parentPort;
if (!port) throw new Error('store/sqlite-thread.js runs as a worker thread');
const options = /** @type {SqliteThreadOptions} */ (workerData);

/** @param {SqlParam} value */
function toSqlite(value) {
  if (typeof value === 'boolean') return value ? 1n : 0n; // libsql aborts the process on a boolean
  // Bind whole numbers as INTEGER, never REAL.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return value;
}

/** @param {number} ms */
function pause(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs a connection setting, again while SQLite answers "busy". Switching a new file to WAL takes
 * the exclusive lock, and SQLite can refuse it at once, without its busy handler, while another
 * connection (another instance or process starting on the same file) holds or is taking a lock;
 * the setting is tried again, with growing pauses, for as long as the busy timeout allows.
 * @param {Database.Database} db @param {string} sql @param {number} deadline
 */
function setting(db, sql, deadline) {
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    try {
      db.exec(sql);
      return;
    } catch (error) {
      const code = /** @type {{ code?: unknown }} */ (error).code;
      const busy = typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
      if (!busy || Date.now() >= deadline) throw error;
      pause(wait);
    }
  }
}

/** @returns {Database.Database} */
function open() {
  const deadline = Date.now() + options.busyTimeoutMs;
  const db = new Database(options.path);
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs)}`);
    setting(db, 'PRAGMA journal_mode = WAL', deadline);
    setting(db, 'PRAGMA synchronous = FULL', deadline);
    setting(db, 'PRAGMA foreign_keys = ON', deadline);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** @type {{ db: Database.Database } | { error: unknown }} */
let connection;
try {
  connection = { db: open() };
  port.postMessage(/** @type {SqliteReply} */ ({ id: OPENED_ID, ok: true }));
} catch (error) {
  // Said once now (the driver's `opened()`), and answered to every request (as "store unavailable").
  connection = { error };
  port.postMessage({ ...failure(OPENED_ID, error), code: 'SQLITE_CANTOPEN' });
}

/** @type {Map<string, Database.Statement>} */
const statements = new Map();

/** @param {Database.Database} db @param {string} sql */
function statement(db, sql) {
  let prepared = statements.get(sql);
  if (!prepared) {
    prepared = db.prepare(sql).safeIntegers(true);
    statements.set(sql, prepared);
  }
  return prepared;
}

/**
 * @param {Database.Database} db
 * @param {readonly SqlStatement[]} script
 * @returns {SqlRow[][] | null}
 */
function batch(db, script) {
  db.exec('BEGIN IMMEDIATE');
  try {
    /** @type {SqlRow[][]} */
    const results = [];
    for (const { sql, params, expectRows } of script) {
      const prepared = statement(db, sql);
      const bound = params.map(toSqlite);
      const rows = prepared.reader ? /** @type {SqlRow[]} */ (prepared.all(bound)) : (prepared.run(bound), []);
      if (expectRows !== undefined && rows.length !== expectRows) {
        db.exec('ROLLBACK');
        return null;
      }
      results.push(rows);
    }
    db.exec('COMMIT');
    return results;
  } catch (error) {
    rollback(db);
    throw error;
  }
}

/** @param {Database.Database} db */
function rollback(db) {
  try {
    if (db.inTransaction) db.exec('ROLLBACK');
  } catch {
    // SQLite already rolled back if the connection failed; the caller's own error matters more.
  }
}

/** @param {Database.Database} db @param {SqliteRequest} request @returns {SqliteReply} */
function execute(db, request) {
  if ('tx' in request && request.tx && !db.inTransaction) throw new Error('no transaction is open');
  switch (request.op) {
    case 'all':
      return {
        id: request.id,
        ok: true,
        rows: /** @type {SqlRow[]} */ (statement(db, request.sql).all(request.params.map(toSqlite))),
      };
    case 'run': {
      const result = statement(db, request.sql).run(request.params.map(toSqlite));
      return { id: request.id, ok: true, changes: Number(result.changes) };
    }
    case 'exec':
      db.exec(request.sql);
      return { id: request.id, ok: true };
    case 'batch':
      return { id: request.id, ok: true, results: batch(db, request.statements) };
    case 'rollback':
      rollback(db);
      return { id: request.id, ok: true };
    case 'close':
      statements.clear();
      if (db.open) db.close();
      return { id: request.id, ok: true };
  }
}

/** @param {number} id @param {unknown} error @returns {SqliteReply} */
function failure(id, error) {
  const code = /** @type {{ code?: unknown } | null} */ (error)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return { id, ok: false, message, code: typeof code === 'string' ? code : null };
}

port.on('message', (/** @type {SqliteRequest} */ request) => {
  /** @type {SqliteReply} */
  let reply;
  if ('error' in connection) {
    // libsql reports a failed open without SQLite's code: it is one all the same.
    const cannotOpen = { ...failure(request.id, connection.error), code: 'SQLITE_CANTOPEN' };
    reply = request.op === 'close' || request.op === 'rollback' ? { id: request.id, ok: true } : cannotOpen;
  } else {
    try {
      reply = execute(connection.db, request);
    } catch (error) {
      reply = failure(request.id, error);
    }
  }
  port.postMessage(reply);
});
