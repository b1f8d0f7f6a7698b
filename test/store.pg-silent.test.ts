/**
 * A PostgreSQL connection that goes silent (a partition, a failover that drops packets instead of
 * closing connections) must not hold a charge forever. Before, a statement on such a connection
 * waited until the kernel gave up on the socket (~15 min): the charge sat in the journal unapplied
 * and unreported — a review found 18 charges still missing 39 s after the network came back — and
 * shutdown waited for it. Each statement now has a deadline (`statementTimeoutMs`): past it the
 * statement fails as `store.unavailable`, its connection is destroyed, and the charge is applied
 * through a new connection once the database answers again.
 *
 * The database sits behind a TCP relay in this process that can freeze: it stops moving bytes on
 * every open connection (forever, as a dead host) and holds new ones unanswered until it thaws.
 */
import { rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgDriver } from '../src/store/pg-driver.js';
import type { SqlDriver } from '../src/store/sql-driver.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { fixedBody, fixedCostModel, X_UNITS } from './helpers/holds.js';
import { postgresDatabaseAt, postgresTarget } from './helpers/store-targets.js';
import { journalDir, moneyTotals, until } from './helpers/journal.js';
import pg from 'pg';
import { TollgateError } from '../src/core/errors.js';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';

const FIXED = fixedCostModel('test/fixed', 'mock-chat');

interface FreezingRelay {
  url: string;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

async function freezingRelay(target: URL): Promise<FreezingRelay> {
  let frozen = false;
  const live = new Set<[Socket, Socket | null]>();
  const waiting: Socket[] = [];
  const wire = (client: Socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const pair: [Socket, Socket | null] = [client, upstream];
    live.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      live.delete(pair);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  };
  const server: Server = createServer((client) => {
    client.on('error', () => client.destroy());
    if (frozen) waiting.push(client);
    else wire(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    freeze() {
      frozen = true;
      // Open connections stop moving bytes for good: nothing is read on either side, nothing closes.
      for (const [client, upstream] of live) {
        client.unpipe();
        upstream?.unpipe();
        client.pause();
        upstream?.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const client of waiting.splice(0)) if (!client.destroyed) wire(client);
    },
    async close() {
      for (const [client, upstream] of live) {
        client.destroy();
        upstream?.destroy();
      }
      for (const client of waiting) client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a PostgreSQL connection that goes silent', { timeout: 60_000 }, () => {
  let schema: PgTestSchema;
  let relay: FreezingRelay;
  let gw: TestGateway;
  let driver: SqlDriver;
  let dir: string;
  beforeAll(async () => {
    schema = await createPgTestSchema();
    relay = await freezingRelay(new URL(schema.url));
    dir = await journalDir();
    gw = await startTestGateway({
      target: postgresTarget,
      // The gateway through the relay, with a short statement deadline (the default is 15 s); the
      // test's own view of the ledger straight to the database.
      database: postgresDatabaseAt(
        relay.url,
        { schema: schema.schema, statementTimeoutMs: 1000, connectionTimeoutMillis: 1000 },
        schema.url,
      ),
      extraModels: [FIXED],
      journalDir: dir,
      configure: (file) => Object.assign(file, { billing: { journal: { min_free_bytes: 0 } } }),
    });
    driver = gw.database.openDriver();
  });
  afterAll(async () => {
    relay?.thaw();
    await gw?.close();
    await gw?.database.cleanup();
    await relay?.close();
    await schema?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a charge whose statements met a silent connection is applied once the database answers again', async () => {
    const accountId = await gw.createAccount(1);
    const { key, hash } = await gw.createKey(accountId);
    expect((await chat(gw, key, fixedBody(FIXED.id, 0))).status).toBe(200);

    relay.freeze();
    let served = 0;
    try {
      // Admission's snapshot is cached: the answer goes out, its charge meets the silent connection.
      const answer = await chat(gw, key, fixedBody(FIXED.id, 1));
      if (answer.status === 200) {
        expect(Math.round(answer.json.usage.cost * 1e9)).toBe(X_UNITS);
        served = 1;
      } else expect(answer.status).toBe(503);
    } finally {
      relay.thaw();
    }
    const expected = BigInt(X_UNITS) * BigInt(1 + served);
    // The connections that went silent stay silent; new ones work: the charge arrives through one.
    await until(
      async () => (await moneyTotals(driver, accountId, hash)).generations === expected,
      20_000,
      'the charge',
    );
    expect(await moneyTotals(driver, accountId, hash)).toEqual({
      generations: expected,
      generationCount: 1 + served,
      keyUsage: expected,
      accountUsage: expected,
    });
    await until(async () => (await chat(gw, key, fixedBody(FIXED.id, 2))).status === 200, 20_000, 'serving again');
  });
});

describe('a statement given up on', { timeout: 60_000 }, () => {
  it('does not run on in the server (one more session per deadline, holding its locks): the server stops it too', async () => {
    const schema = await createPgTestSchema();
    const driver = openPgDriver(schema.url, { schema: schema.schema, max: 2, statementTimeoutMs: 1100 });
    const holder = new pg.Client({ connectionString: schema.url });
    await holder.connect();
    try {
      await driver.exec('CREATE TABLE lock_probe (id int)');
      // Another session holds the table, as a long migration in another process would.
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${schema.schema}.lock_probe IN ACCESS EXCLUSIVE MODE`);
      for (let i = 0; i < 6; i++) {
        const failure = await driver.all('SELECT count(*) AS n FROM lock_probe').then(
          () => null,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(TollgateError);
        expect((failure as TollgateError).code).toBe('store.unavailable');
      }
      // Nothing of ours is still waiting on the table in the server.
      const { rows } = await holder.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%FROM lock_probe%' AND state = 'active' AND pid <> pg_backend_pid()",
      );
      expect(rows[0].n).toBe(0);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await driver.close();
      await schema.drop();
    }
  });
});
