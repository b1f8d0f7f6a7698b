import { openPgDriver, type PgDriverOptions } from './pg-driver.js';
import { SqlStore } from './sql-store.js';
import { openSqliteDriver, type SqliteDriverOptions } from './sqlite-driver.js';

/** Embedded store in one SQLite file (or ':memory:'). Call `migrate()` before use. */
export function openSqliteStore(path: string, options: SqliteDriverOptions = {}): SqlStore {
  return new SqlStore(openSqliteDriver(path, options));
}

/**
 * The embedded store once its file is open. Unlike a database server that is down, a file that
 * cannot be opened now (not a database, a directory that cannot be written) will not open later:
 * `tollgate serve` fails its boot here, saying why.
 */
export async function openSqliteStoreWhenOpen(path: string, options: SqliteDriverOptions = {}): Promise<SqlStore> {
  const driver = openSqliteDriver(path, options);
  try {
    await driver.opened();
  } catch (error) {
    await driver.close();
    throw error;
  }
  return new SqlStore(driver);
}

/** PostgreSQL store; connections are opened lazily, so this never throws for an unreachable server. */
export function openPostgresStore(url: string, options: PgDriverOptions = {}): SqlStore {
  return new SqlStore(openPgDriver(url, options));
}
