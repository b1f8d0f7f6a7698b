/**
 * Migration 7 replaces `sign_in_addresses`: version 6 stored a plain SHA-256 of the address (which
 * gives it back), and an interim build of main had version 6 with the tag column instead. A
 * database at either version 6 is upgraded (its rows dropped: 30-day hints, the old ones must not
 * stay), and a sign-in, which remembers the address, then works.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../src/store/apply-migrations.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { createHolder } from './helpers/session.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';

/** Version 6 as one build of main had it for a while: the tag column already there. */
const INTERIM_MIGRATION_6 = {
  ...MIGRATIONS.find((m) => m.version === 6)!,
  sql: MIGRATIONS.find((m) => m.version === 6)!.sql.replaceAll('address_hash', 'address_tag'),
};

const CASES = STORE_TARGETS.flatMap((target) => [
  { name: `${target.name}, version 6 as released`, target, six: MIGRATIONS.find((m) => m.version === 6)! },
  { name: `${target.name}, version 6 of the interim build`, target, six: INTERIM_MIGRATION_6 },
]);

describe.each(CASES)('a database at version 6 ($name)', ({ target, six }) => {
  let database: StoreDatabase;
  let gw: TestGateway;

  beforeAll(async () => {
    database = await target.createDatabase();
    const driver = database.openDriver();
    await applyMigrations(driver, Date.now, [...MIGRATIONS.filter((m) => m.version < 6), six]);
    // A familiar address remembered the old way: version 7 drops it (a plain hash gives it back).
    await driver.run('INSERT INTO sign_in_addresses VALUES (?, ?, ?)', ['acct_old', 'f'.repeat(64), Date.now()]);
    gw = await startTestGateway({ target, database });
  });
  afterAll(async () => {
    await gw.close();
    await database.cleanup();
  });

  it('is upgraded by version 7: old rows gone, and sign-in (which remembers the address) works', async () => {
    expect(await gw.database.openDriver().all('SELECT * FROM sign_in_addresses')).toEqual([]);
    const holder = await createHolder(gw);
    const result = await call(gw, 'POST', '/session', {
      json: { email: holder.email, password: holder.password },
    });
    expect(result.status, result.text).toBe(200);
  });
});
