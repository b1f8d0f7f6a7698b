import { openPostgresStore, openSqliteStore } from '../../src/store/open-store.js';
import { openPgDriver, type PgDriverOptions } from '../../src/store/pg-driver.js';
import type { SqlDriver } from '../../src/store/sql-driver.js';
import { openSqliteDriver } from '../../src/store/sqlite-driver.js';
import type { Store } from '../../src/store/types.js';
import { createPgTestSchema } from './pg.js';
import { createSqliteTestFile } from './sqlite.js';

/** One empty database; every store or driver opened on it is closed by `cleanup()`. */
export interface StoreDatabase {
  openStore(): Store;
  /** Raw SQL on the same database, for assertions the Store interface does not expose. */
  openDriver(): SqlDriver;
  cleanup(): Promise<void>;
}

export interface StoreTarget {
  name: 'sqlite' | 'postgres';
  createDatabase(): Promise<StoreDatabase>;
}

function tracked(open: { store: () => Store; driver: () => SqlDriver }, dispose: () => Promise<void>): StoreDatabase {
  const closers: Array<() => Promise<void>> = [];
  return {
    openStore() {
      const store = open.store();
      closers.push(() => store.close());
      return store;
    },
    openDriver() {
      const driver = open.driver();
      closers.push(() => driver.close());
      return driver;
    },
    async cleanup() {
      await Promise.allSettled(closers.map((close) => close()));
      await dispose();
    },
  };
}

export const sqliteTarget: StoreTarget = {
  name: 'sqlite',
  async createDatabase() {
    const file = await createSqliteTestFile();
    return tracked({ store: () => openSqliteStore(file.path), driver: () => openSqliteDriver(file.path) }, file.remove);
  },
};

export const postgresTarget: StoreTarget = {
  name: 'postgres',
  async createDatabase() {
    const { url, schema, drop } = await createPgTestSchema();
    return tracked(
      { store: () => openPostgresStore(url, { schema }), driver: () => openPgDriver(url, { schema }) },
      drop,
    );
  },
};

/**
 * A PostgreSQL database the caller set up (and drops): the gateway's store opened at `storeUrl` with
 * `options` (a relay in between, a short statement deadline…), the test's own view at `driverUrl`.
 * `cleanup()` closes what was opened and drops nothing.
 */
export function postgresDatabaseAt(
  storeUrl: string,
  options: PgDriverOptions & { schema: string },
  driverUrl = storeUrl,
): StoreDatabase {
  return tracked(
    {
      store: () => openPostgresStore(storeUrl, options),
      driver: () => openPgDriver(driverUrl, { schema: options.schema }),
    },
    async () => undefined,
  );
}

/** Both stores; without PostgreSQL outside CI (test/service-availability.ts), the embedded one only. */
export const STORE_TARGETS: readonly StoreTarget[] = process.env.TOLLGATE_TEST_NO_POSTGRES
  ? [sqliteTarget]
  : [sqliteTarget, postgresTarget];
