/**
 * Issue 8, finding 7: when a process's LISTEN connection dropped, changes published meanwhile were
 * lost and its key cache served a disabled key until the TTL (30 s). Now every (re)connect flushes
 * the caches, and a publisher whose own listener is down still notifies the others.
 *
 * Two gateways share one PostgreSQL schema, each with its own PgChangeBus. Only this test's own
 * listener connections are terminated, found by a unique application_name.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgChangeBus } from '../src/store/pg-change-bus.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { pgTestUrl } from './helpers/pg.js';
import { postgresTarget, type StoreDatabase } from './helpers/store-targets.js';

const quiet = { warn: () => undefined };
const ASK = { model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] };

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('PostgreSQL change bus across a lost LISTEN connection', () => {
  const nameA = `tg_bus_a_${randomBytes(4).toString('hex')}`;
  const nameB = `tg_bus_b_${randomBytes(4).toString('hex')}`;
  let database: StoreDatabase;
  let url: string;
  let busA: PgChangeBus;
  let busB: PgChangeBus;
  let a: TestGateway;
  let b: TestGateway;

  /** Terminates the backend of one of this test's listeners (never another session). */
  async function killListener(applicationName: string): Promise<void> {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
        [applicationName],
      );
      expect(killed.rows).toEqual([{ ok: true }]);
    } finally {
      await admin.end();
    }
  }

  beforeAll(async () => {
    url = await pgTestUrl();
    database = await postgresTarget.createDatabase();
    // Reconnection after 1.5 s: the test acts within that window and checks that it did.
    busA = await PgChangeBus.connect(`${url}?application_name=${nameA}`, quiet, { reconnectDelayMs: 1500 });
    busB = await PgChangeBus.connect(`${url}?application_name=${nameB}`, quiet, { reconnectDelayMs: 1500 });
    a = await startTestGateway({ target: postgresTarget, database, bus: busA });
    b = await startTestGateway({ target: postgresTarget, database, bus: busB });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await busA?.close();
    await busB?.close();
    await database?.cleanup();
  });

  it('a key disabled while the listener was down is refused right after it reconnects', async () => {
    const { key, hash } = await a.createKey(await a.createAccount(1));
    expect((await chat(a, key, ASK)).status).toBe(200); // cached in A (TTL 30 s)

    const before = busA.connections;
    await killListener(nameA);
    await until(() => !busA.connected, "A's listener to notice the loss");
    expect((await b.admin('PATCH', `/keys/${hash}`, { disabled: true })).status).toBe(200);
    // The disable was published while A was not listening: that notification is lost for A.
    expect(busA.connections).toBe(before);
    await until(() => busA.connections > before, "A's listener to reconnect");

    expect((await chat(a, key, ASK)).status).toBe(401);
  });

  it('a publisher whose own listener is down still tells the others', async () => {
    const { key, hash } = await a.createKey(await a.createAccount(1));
    expect((await chat(a, key, ASK)).status).toBe(200); // cached in A
    const before = busB.connections;
    await killListener(nameB);
    await until(() => !busB.connected, "B's listener to notice the loss");
    expect((await b.admin('PATCH', `/keys/${hash}`, { disabled: true })).status).toBe(200);
    expect(busB.connections).toBe(before); // published while B's listener was down
    // A stayed connected: it hears the change (no flush of its own involved), long before the TTL.
    await until(async () => (await chat(a, key, ASK)).status === 401, 'A to refuse the key', 5000);
  });
});
