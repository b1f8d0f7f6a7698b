import { resolve } from 'node:path';
import Database from 'libsql';
import { TollgateError } from '../core/errors.js';
import { AsyncMutex } from './async-mutex.js';
import type { RunResult, SqlDriver, SqlExecutor, SqlParam, SqlRow } from './sql-driver.js';

type SqliteValue = bigint | number | string | null;

/**
 * libsql's API is synchronous, so a statement can only interleave with a transaction at an `await`
 * inside the transaction body. One mutex per database file per process closes that gap: while a
 * transaction is open every other statement on that file (from any driver instance) waits. Sharing it
 * across instances also matters because a second connection's BEGIN IMMEDIATE would otherwise block
 * the only thread on a lock that the first connection can never release.
 */
const fileMutexes = new Map<string, { mutex: AsyncMutex; users: number }>();

function claimMutex(key: string | null): AsyncMutex {
  if (key === null) return new AsyncMutex();
  const entry = fileMutexes.get(key) ?? { mutex: new AsyncMutex(), users: 0 };
  entry.users += 1;
  fileMutexes.set(key, entry);
  return entry.mutex;
}

function releaseMutex(key: string | null): void {
  if (key === null) return;
  const entry = fileMutexes.get(key);
  if (!entry) return;
  entry.users -= 1;
  if (entry.users <= 0) fileMutexes.delete(key);
}

function toSqlite(value: SqlParam): SqliteValue {
  if (typeof value === 'boolean') return value ? 1n : 0n; // libsql aborts the process on a boolean
  // Bind whole numbers as INTEGER, never REAL.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return value;
}

const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|CORRUPT|NOTADB)/;

function translateError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.test(code)) {
    return new TollgateError('store.unavailable', 'Storage is unavailable', { cause: error });
  }
  return error;
}

export interface SqliteDriverOptions {
  /** Milliseconds a writer waits for another process's lock. */
  busyTimeoutMs?: number;
}

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  readonly #db: Database.Database;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #mutexKey: string | null;
  readonly #mutex: AsyncMutex;

  constructor(path: string, options: SqliteDriverOptions = {}) {
    const inMemory = path === ':memory:' || path === '';
    this.#mutexKey = inMemory ? null : resolve(path);
    try {
      this.#db = new Database(path);
      this.#db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
      this.#db.exec('PRAGMA journal_mode = WAL');
      this.#db.exec('PRAGMA synchronous = FULL');
      this.#db.exec('PRAGMA foreign_keys = ON');
    } catch (error) {
      throw translateError(error);
    }
    this.#mutex = claimMutex(this.#mutexKey);
  }

  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    return this.#outsideTransaction(() => this.#all(sql, params));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.#outsideTransaction(() => this.#run(sql, params));
  }

  exec(script: string): Promise<void> {
    return this.#outsideTransaction(() => this.#exec(script));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#mutex.runExclusive(async () => {
      this.#exec('BEGIN IMMEDIATE');
      let open = true;
      const guard = <R>(action: () => R): Promise<R> => {
        if (!open) return Promise.reject(new Error('transaction already finished'));
        try {
          return Promise.resolve(action());
        } catch (error) {
          return Promise.reject(error);
        }
      };
      const tx: SqlExecutor = {
        all: (sql, params) => guard(() => this.#all(sql, params)),
        run: (sql, params) => guard(() => this.#run(sql, params)),
        exec: (script) => guard(() => this.#exec(script)),
      };
      try {
        const result = await fn(tx);
        open = false;
        this.#exec('COMMIT');
        return result;
      } catch (error) {
        open = false;
        try {
          if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
        } catch {
          // The original error matters more; SQLite already rolled back if the connection failed.
        }
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await this.#mutex.runExclusive(() => {
      if (!this.#db.open) return;
      this.#statements.clear();
      this.#db.close();
      releaseMutex(this.#mutexKey);
    });
  }

  /** Fast path: with no transaction open anywhere on this file, a synchronous statement cannot interleave. */
  #outsideTransaction<R>(action: () => R): Promise<R> {
    if (!this.#mutex.locked) {
      try {
        return Promise.resolve(action());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#mutex.runExclusive(action);
  }

  #statement(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql).safeIntegers(true);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #all(sql: string, params: readonly SqlParam[] = []): SqlRow[] {
    try {
      return this.#statement(sql).all(params.map(toSqlite)) as SqlRow[];
    } catch (error) {
      throw translateError(error);
    }
  }

  #run(sql: string, params: readonly SqlParam[] = []): RunResult {
    try {
      const result = this.#statement(sql).run(params.map(toSqlite));
      return { changes: Number(result.changes) };
    } catch (error) {
      throw translateError(error);
    }
  }

  #exec(script: string): void {
    try {
      this.#db.exec(script);
    } catch (error) {
      throw translateError(error);
    }
  }
}

export function openSqliteDriver(path: string, options: SqliteDriverOptions = {}): SqliteDriver {
  return new SqliteDriver(path, options);
}
