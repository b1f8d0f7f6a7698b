/**
 * A PostgreSQL that answers but cannot take writes — read-only (25006: a managed database whose disk
 * filled, a primary demoted behind the same address), a cancelled statement (57014), a lock timeout —
 * is an outage, not a refusal of the charge. Before, such an error read as "the store refused this
 * row": each charge was tried alone, refused again and dropped from the journal, while admission
 * (reads work) went on serving answers that were never charged — 5.9× an account's balance in a
 * review. Now the charge waits in the journal, paid requests are refused (503) until writes work
 * again, and every answer served is charged once they do.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import { openPgDriver } from '../src/store/pg-driver.js';
import type { SqlDriver } from '../src/store/sql-driver.js';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { fixedBody, fixedCostModel, X_UNITS } from './helpers/holds.js';
import { postgresDatabaseAt, postgresTarget } from './helpers/store-targets.js';
import { journalDir, metric, moneyTotals, until } from './helpers/journal.js';
import { pgTestUrl } from './helpers/pg.js';

const FIXED = fixedCostModel('test/fixed', 'mock-chat');

/** A login role of our own owning a schema of our own: its sessions can be made read-only without touching anyone else's. */
async function ownRole() {
  const adminUrl = await pgTestUrl();
  const suffix = randomBytes(5).toString('hex');
  const role = `tg_ro_${suffix}`;
  const schema = `tg_ro_${suffix}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE ROLE ${role} LOGIN`);
  await admin(`CREATE SCHEMA ${schema} AUTHORIZATION ${role}`);
  const url = new URL(adminUrl);
  url.username = role;
  const terminate = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`;
  return {
    url: url.toString(),
    schema,
    /** New sessions read-only (or not); the role's open sessions end, so the pool reconnects into the new setting. */
    async readOnly(on: boolean) {
      await admin(
        on
          ? `ALTER ROLE ${role} SET default_transaction_read_only = on`
          : `ALTER ROLE ${role} RESET default_transaction_read_only`,
      );
      await admin(terminate);
    },
    async drop() {
      await admin(`ALTER ROLE ${role} RESET ALL`).catch(() => undefined);
      await admin(terminate).catch(() => undefined);
      await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin(`DROP ROLE IF EXISTS ${role}`);
    },
  };
}

describe('a PostgreSQL that answers but cannot take writes', { timeout: 60_000 }, () => {
  let db: Awaited<ReturnType<typeof ownRole>>;
  let gw: TestGateway;
  let driver: SqlDriver;
  let dir: string;
  beforeAll(async () => {
    db = await ownRole();
    dir = await journalDir();
    gw = await startTestGateway({
      target: postgresTarget,
      database: postgresDatabaseAt(db.url, { schema: db.schema }),
      extraModels: [FIXED],
      journalDir: dir,
      configure: (file) => Object.assign(file, { billing: { journal: { min_free_bytes: 0 } } }),
    });
    driver = gw.database.openDriver();
  });
  afterAll(async () => {
    await db.readOnly(false).catch(() => undefined);
    await gw?.close();
    await gw?.database.cleanup();
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a write refused for the database state is store.unavailable, not a refusal of the row', async () => {
    await db.readOnly(true);
    try {
      const own = openPgDriver(db.url, { schema: db.schema });
      try {
        const failure = await own.run('UPDATE accounts SET total_usage = total_usage WHERE id = ?', ['x']).then(
          () => null,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(TollgateError);
        expect((failure as TollgateError).code).toBe('store.unavailable');
      } finally {
        await own.close();
      }
    } finally {
      await db.readOnly(false);
    }
  });

  it('answers served while the database is read-only are charged once it takes writes again; paid requests are refused meanwhile', async () => {
    const accountId = await gw.createAccount(1);
    const { key, hash } = await gw.createKey(accountId);
    expect((await chat(gw, key, fixedBody(FIXED.id, 0))).status).toBe(200);

    await db.readOnly(true);
    const served: number[] = [];
    try {
      // The first answers after the switch: admission still reads, their charges meet the read-only database.
      const plain = await chat(gw, key, fixedBody(FIXED.id, 1));
      const streamed = await chatStream(gw, key, fixedBody(FIXED.id, 2));
      for (const [status, cost] of [
        [plain.status, plain.json?.usage?.cost],
        [streamed.status, streamed.events.find((e: any) => e.usage)?.usage?.cost],
      ]) {
        // Served and charged (from the journal), or refused before anything was forwarded: never served free.
        if (status === 200) {
          expect(cost).toBeTypeOf('number');
          served.push(Math.round(cost * 1e9));
        } else expect(status).toBe(503);
      }
      expect(streamed.events.some((e: any) => e.error)).toBe(false);
      // Once a charge met the read-only database, paid requests are refused until writes work again.
      await until(async () => (await chat(gw, key, fixedBody(FIXED.id, 3))).status === 503, 10_000, 'a 503');
      expect(await metric(gw.url, 'tollgate_charges_refused_total')).toBe(0);
    } finally {
      await db.readOnly(false);
    }

    const expected = BigInt(X_UNITS) * BigInt(1 + served.length);
    await until(
      async () => (await moneyTotals(driver, accountId, hash)).generations === expected,
      20_000,
      'the charges',
    );
    const totals = await moneyTotals(driver, accountId, hash);
    expect(totals).toEqual({
      generations: expected,
      generationCount: 1 + served.length,
      keyUsage: expected,
      accountUsage: expected,
    });
    expect(served.every((cost) => cost === X_UNITS)).toBe(true);
    await until(async () => (await chat(gw, key, fixedBody(FIXED.id, 4))).status === 200, 20_000, 'serving again');
  });
});
