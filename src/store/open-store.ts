import { openPgDriver, type PgDriverOptions } from './pg-driver.js';
import { SqlStore } from './sql-store.js';
import { openSqliteDriver, type SqliteDriverOptions } from './sqlite-driver.js';

/** Embedded store in one SQLite file (or ':memory:'). Call `migrate()` before use. */
export function openSqliteStore(path: string, options: SqliteDriverOptions = {}): SqlStore {
  return new SqlStore(openSqliteDriver(path, options));
}

/** PostgreSQL store; connections are opened lazily, so this never throws for an unreachable server. */
export function openPostgresStore(url: string, options: PgDriverOptions = {}): SqlStore {
  return new SqlStore(openPgDriver(url, options));
}
