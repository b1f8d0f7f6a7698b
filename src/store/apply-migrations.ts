import { MIGRATIONS, type Migration } from './migrations.js';
import type { SqlDriver, SqlExecutor } from './sql-driver.js';
import { asNumber } from './row-values.js';

/** Arbitrary but fixed: every Tollgate process migrating the same database contends on this one lock. */
export const MIGRATION_LOCK_ID = 7_462_351_937_112_004n;

const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at BIGINT NOT NULL
)`;

async function appliedVersions(tx: SqlExecutor): Promise<Set<number>> {
  const rows = await tx.all('SELECT version FROM schema_migrations');
  return new Set(rows.map((row) => asNumber(row.version)));
}

/**
 * Applies pending migrations in one transaction. Concurrent starters serialize: PostgreSQL on an
 * advisory lock taken before anything is read, SQLite on BEGIN IMMEDIATE (the write lock up front).
 * The applied versions are read only once the lock is held, so a loser sees the winner's work.
 */
export async function applyMigrations(
  driver: SqlDriver,
  now: () => number = Date.now,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  return driver.transaction(
    async (tx) => {
      if (driver.dialect === 'postgres') await tx.all('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK_ID]);
      await tx.exec(CREATE_MIGRATIONS_TABLE);
      const applied = await appliedVersions(tx);
      const ran: number[] = [];
      for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
        if (applied.has(migration.version)) continue;
        await tx.exec(migration.sql);
        await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
          migration.version,
          migration.name,
          now(),
        ]);
        ran.push(migration.version);
      }
      return ran;
    },
    { unbounded: true },
  );
}
