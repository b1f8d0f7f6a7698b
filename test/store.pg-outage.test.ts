/**
 * PostgreSQL failures never crash the gateway and never lose a charge (issue 11, items 4–5):
 *   - a checked-out client whose backend is terminated between two statements: the transaction fails
 *     with `store.unavailable`, no unhandled 'error' event;
 *   - `tollgate serve` boots while its (private) PostgreSQL is down: not ready, then ready and migrated
 *     when it starts;
 *   - PostgreSQL stopped for seconds under load (streamed and not): the process survives and every
 *     answer the upstream produced is charged once it returns, totals exact.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { openPgDriver } from '../src/store/pg-driver.js';
import { fixedCostModel, X_UNITS } from './helpers/holds.js';
import { metric, readyz, until } from './helpers/journal.js';
import { createPgTestSchema } from './helpers/pg.js';
import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-pg.js';
import { adminClient, buildOnce, type ServeProcess, startServe } from './helpers/process.js';
import { parseSse } from './helpers/gateway.js';

describe('a checked-out PostgreSQL client losing its connection', () => {
  it('fails the transaction with store.unavailable instead of crashing the process (backend terminated between two statements)', async () => {
    const schema = await createPgTestSchema();
    const driver = openPgDriver(schema.url, { schema: schema.schema });
    const admin = new pg.Client({ connectionString: schema.url });
    await admin.connect();
    const unhandled: unknown[] = [];
    const onUncaught = (error: unknown) => unhandled.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const outcome = await driver
        .transaction(async (tx) => {
          const [row] = await tx.all('SELECT pg_backend_pid() AS pid');
          // Our own test connection's backend only: the shared server is otherwise untouched.
          await admin.query('SELECT pg_terminate_backend($1)', [Number(row!.pid)]);
          await new Promise((resolve) => setTimeout(resolve, 300)); // the termination notice arrives while checked out
          await tx.all('SELECT 1 AS again');
        })
        .then(
          () => 'committed',
          (error: unknown) => error,
        );
      expect(outcome).toBeInstanceOf(TollgateError);
      expect((outcome as TollgateError).code).toBe('store.unavailable');
      expect(unhandled).toEqual([]);
      // The pool replaced the dead connection: the next transaction works.
      expect(await driver.transaction(async (tx) => (await tx.all('SELECT 1 AS ok'))[0]!.ok)).toBe(1);
    } finally {
      process.off('uncaughtException', onUncaught);
      await admin.end();
      await driver.close();
      await schema.drop();
    }
  });
});

const ADMIN = 'admin-token-for-pg-outage-01';
const MODEL = fixedCostModel('test/fixed', 'mock@latency=40,tps=200');

const adminCall = adminClient(ADMIN);

interface Answer {
  status: number;
  /** Cost reported to the caller (units); null when the answer carried none. */
  cost: number | null;
  streamed: boolean;
  /** A 200 stream that ended with an in-band error instead of its usage chunk. */
  inBandError: boolean;
  /** An error answer's `error.metadata.reason`. */
  reason?: unknown;
}

async function ask(url: string, key: string, i: number): Promise<Answer> {
  const streamed = i % 2 === 0;
  try {
    const response = await request(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL.id,
        messages: [{ role: 'user', content: `load ${i}` }],
        max_tokens: 10,
        stream: streamed,
      }),
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) {
      const reason = (JSON.parse(text) as { error?: { metadata?: { reason?: unknown } } }).error?.metadata?.reason;
      return { status: response.statusCode, cost: null, streamed, inBandError: false, reason };
    }
    if (!streamed)
      return { status: 200, cost: Math.round(JSON.parse(text).usage.cost * 1e9), streamed, inBandError: false };
    const { events } = parseSse(text);
    const usage = events.find((e) => e.usage)?.usage;
    const inBandError = events.some((e) => e.error);
    return { status: 200, cost: usage ? Math.round(usage.cost * 1e9) : null, streamed, inBandError };
  } catch {
    return { status: 0, cost: null, streamed, inBandError: false };
  }
}

describe('tollgate serve on a private PostgreSQL that goes away', { timeout: 240_000 }, () => {
  let pgServer: PrivatePostgres;
  let provider: MockProvider;
  let dir: string;
  let gateway: ServeProcess | null = null;

  beforeAll(async () => {
    const built = buildOnce();
    [pgServer, provider, dir] = await Promise.all([
      startPrivatePostgres(),
      startMockProvider(),
      mkdtemp(join(tmpdir(), 'tollgate-pg-outage-')),
    ]);
    await built;
  }, 180_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await pgServer?.destroy();
    await provider?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('boots while PostgreSQL is down (not ready), becomes ready and migrated when it starts; survives a stop under load with every answer charged', async () => {
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(
      configPath,
      stringify({
        providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
        models: [MODEL],
        limits: { edge: { burst: 0 }, redis_prefix: `tollgate:test:${randomBytes(4).toString('hex')}:` },
        billing: { journal: { min_free_bytes: 0 } },
        cache: { balance_ttl_ms: 200 },
      }),
    );
    // PostgreSQL is not running yet.
    gateway = await startServe(
      {
        TOLLGATE_CONFIG: configPath,
        DATABASE_URL: pgServer.url,
        TOLLGATE_DATA_DIR: join(dir, 'data'),
        TOLLGATE_ADMIN_TOKEN: ADMIN,
        TOLLGATE_LOG_LEVEL: 'warn',
      },
      90_000,
    );
    const url = gateway.url;
    const notReady = await readyz(url);
    expect(notReady.status).toBe(503);
    expect(notReady.json.reasons).toContain('starting');

    await pgServer.start();
    await until(async () => (await readyz(url)).status === 200, 60_000, 'ready after PostgreSQL started');
    const account = await adminCall(url, 'POST', '/accounts', {
      email: `pg-outage-${randomBytes(3).toString('hex')}@example.test`,
    });
    const accountId = account.data.id as string;
    await adminCall(url, 'POST', `/accounts/${accountId}/credits`, { amount: 100, kind: 'grant' });
    const created = await adminCall(url, 'POST', `/accounts/${accountId}/keys`, { name: 'load' });
    const key = created.key as string;
    const keyHash = created.data.hash as string;
    // A key never used before the outage: this process has nothing cached to authenticate it from.
    const unused = (await adminCall(url, 'POST', `/accounts/${accountId}/keys`, { name: 'unused' })).key as string;

    // Sustained load: 8 workers, streamed and not, while PostgreSQL is stopped for ~4 s and started again.
    let running = true;
    let counter = 0;
    const answers: Answer[] = [];
    const workers = Array.from({ length: 8 }, async () => {
      while (running) answers.push(await ask(url, key, counter++));
    });
    await until(() => answers.filter((a) => a.status === 200).length >= 20, 60_000, 'load running');
    await pgServer.stop();
    const stoppedAt = answers.length;
    // Answers given while it is down were charged to the journal only: watch its backlog meanwhile.
    let journaledMax = 0;
    const outageEnds = Date.now() + 4000;
    while (Date.now() < outageEnds) {
      journaledMax = Math.max(journaledMax, (await metric(url, 'tollgate_charge_journal_backlog')) ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const duringOutage = answers.slice(stoppedAt);
    const unknownKey = await ask(url, unused, 1);
    await pgServer.start();
    await until(async () => (await readyz(url)).status === 200, 60_000, 'ready after PostgreSQL restarted');
    const afterRestart = answers.length;
    await until(
      () => answers.slice(afterRestart).filter((a) => a.status === 200).length >= 20,
      60_000,
      'load served again',
    );
    running = false;
    await Promise.all(workers);

    expect(gateway.child.exitCode).toBeNull(); // the process survived
    expect(duringOutage.some((a) => a.status === 503)).toBe(true); // closed: paid requests refused while out
    // Every store-outage 503 says why, the one whose key could not be read too (docs/api.md).
    expect(duringOutage.filter((a) => a.status === 503 && typeof a.reason !== 'string')).toEqual([]);
    expect(unknownKey).toMatchObject({ status: 503, reason: 'store_unavailable' });
    await until(async () => (await metric(url, 'tollgate_charge_journal_depth')) === 0, 30_000, 'journal drained');

    const ok = answers.filter((a) => a.status === 200);
    expect(ok.filter((a) => a.inBandError || a.cost === null)).toEqual([]); // every 200 carried its charge
    const answered = ok.reduce((sum, a) => sum + a.cost!, 0);
    expect(answered).toBe(ok.length * X_UNITS);

    const client = new pg.Client({ connectionString: pgServer.url });
    await client.connect();
    try {
      const g = await client.query(
        'SELECT COUNT(*)::int AS n, COALESCE(SUM(total_cost), 0)::text AS total FROM generations WHERE account_id = $1',
        [accountId],
      );
      const k = await client.query(
        "SELECT usage::text AS usage FROM key_usage WHERE key_hash = $1 AND period = 'all'",
        [keyHash],
      );
      const a = await client.query('SELECT total_usage::text AS usage FROM accounts WHERE id = $1', [accountId]);
      const figures = {
        answers200: ok.length,
        generations: g.rows[0].n,
        generationCost: g.rows[0].total,
        keyUsage: k.rows[0].usage,
        accountUsage: a.rows[0].usage,
      };
      console.log(
        'PostgreSQL stopped 4 s under load:',
        JSON.stringify({
          ...figures,
          journaledMax,
          refusedDuringOutage: duringOutage.filter((x) => x.status === 503).length,
        }),
      );
      expect(figures.generations).toBe(ok.length);
      expect([figures.generationCost, figures.keyUsage, figures.accountUsage]).toEqual([
        String(answered),
        String(answered),
        String(answered),
      ]);
    } finally {
      await client.end();
    }
  });
});
