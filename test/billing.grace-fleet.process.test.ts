/**
 * `billing.on_store_error: grace` across a fleet (README, "The charge journal and store outages"):
 * two `tollgate serve` processes on one private PostgreSQL and the shared Redis. With PostgreSQL
 * stopped, a burst at both processes is admitted up to `grace.max_exposure_usd` for the account in
 * all — each process used to count only its own admissions, so the fleet gave N times the bound — and
 * the ledger is exact once PostgreSQL is back. A Redis that restarts without its data meanwhile gets
 * each process's admissions back: no second allowance.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { readyz, until } from './helpers/journal.js';
import { REDIS_TEST_URL } from './helpers/limiter-targets.js';
import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-pg.js';
import { startPrivateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { buildOnce, startServe, type ServeProcess } from './helpers/process.js';

const ADMIN = 'admin-token-for-grace-fleet-1';
const MODEL = fixedCostModel('test/fixed', 'mock-chat');

async function adminCall(url: string, path: string, body: unknown) {
  const response = await request(`${url}/api/v1/admin${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.body.json()) as any;
  if (response.statusCode >= 300) throw new Error(`POST ${path}: ${response.statusCode} ${JSON.stringify(json)}`);
  return json;
}

async function chatReason(url: string, key: string, i: number): Promise<{ status: number; reason?: string }> {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(fixedBody(MODEL.id, i)),
  });
  const text = await response.body.text();
  if (response.statusCode === 200) return { status: 200 };
  return { status: response.statusCode, reason: (JSON.parse(text) as any).error?.metadata?.reason };
}

async function chat(url: string, key: string, i: number): Promise<number> {
  return (await chatReason(url, key, i)).status;
}

describe('grace admissions counted for the fleet', { timeout: 240_000 }, () => {
  let pgServer: PrivatePostgres;
  let redisServer: PrivateRedis;
  let provider: MockProvider;
  let dir: string;
  const gateways: ServeProcess[] = [];

  beforeAll(async () => {
    const built = buildOnce();
    [pgServer, redisServer, provider, dir] = await Promise.all([
      startPrivatePostgres(),
      startPrivateRedis(),
      startMockProvider(),
      mkdtemp(join(tmpdir(), 'tollgate-grace-fleet-')),
    ]);
    await built;
  }, 180_000);

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop('SIGKILL')));
    await pgServer?.destroy();
    await redisServer?.destroy();
    await provider?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Two processes on the private PostgreSQL and `redisUrl`; one account worth 1000 X with a cap of 3 X;
   * PostgreSQL stopped, 30 requests across both, then `meanwhile` (still in the outage); PostgreSQL
   * back, the ledger checked. Returns how many of the 30 were admitted.
   */
  async function outage(redisUrl: string, meanwhile: (urls: string[], key: string) => Promise<void>) {
    await pgServer.start();
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(
      configPath,
      stringify({
        providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
        models: [MODEL],
        limits: { edge: { burst: 0 }, redis_prefix: `tollgate:test:${randomBytes(4).toString('hex')}:` },
        billing: {
          on_store_error: 'grace',
          grace: { max_exposure_usd: 3 * X_USD, max_duration_ms: 60_000 },
          journal: { min_free_bytes: 0 },
        },
      }),
    );
    for (const name of ['a', 'b'])
      gateways.push(
        await startServe(
          {
            TOLLGATE_CONFIG: configPath,
            DATABASE_URL: pgServer.url,
            REDIS_URL: redisUrl,
            TOLLGATE_DATA_DIR: join(dir, `${name}-${randomBytes(3).toString('hex')}`),
            TOLLGATE_ADMIN_TOKEN: ADMIN,
            TOLLGATE_LOG_LEVEL: 'warn',
          },
          90_000,
        ),
      );
    const urls = gateways.map((g) => g.url);
    // Ready, with the fleet trusting Redis (a new fleet's first resync window is over): no grace before that.
    for (const url of urls) await until(async () => (await readyz(url)).json.status === 'ready', 60_000, 'ready');
    const account = await adminCall(urls[0]!, '/accounts', {
      email: `grace-${randomBytes(3).toString('hex')}@example.test`,
    });
    const accountId = account.data.id as string;
    await adminCall(urls[0]!, `/accounts/${accountId}/credits`, { amount: 1, kind: 'grant' }); // 1000 X: only the cap binds
    const key = (await adminCall(urls[0]!, `/accounts/${accountId}/keys`, { name: 'fleet' })).key as string;
    // Each process learns the balance it will serve the outage from.
    for (const url of urls) expect(await chat(url, key, 0)).toBe(200);

    await pgServer.stop();
    for (const url of urls)
      await until(async () => (await readyz(url)).json.status === 'degraded', 30_000, 'serving under grace');
    const before = provider.stats.requests;
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(urls[i % 2]!, key, i + 1)));
    const admitted = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(provider.stats.requests - before).toBe(admitted);
    await meanwhile(urls, key);

    await pgServer.start();
    for (const url of urls) await until(async () => (await readyz(url)).json.status === 'ready', 60_000, 'ready again');
    const client = new pg.Client({ connectionString: pgServer.url });
    await client.connect();
    try {
      await until(
        async () =>
          (await client.query('SELECT total_usage::text AS usage FROM accounts WHERE id = $1', [accountId])).rows[0]
            .usage === String((2 + admitted) * X_UNITS),
        30_000,
        'every charge applied',
      );
      const g = await client.query(
        'SELECT COUNT(*)::int AS n, SUM(total_cost)::text AS total FROM generations WHERE account_id = $1',
        [accountId],
      );
      expect(g.rows[0]).toEqual({ n: 2 + admitted, total: String((2 + admitted) * X_UNITS) });
    } finally {
      await client.end();
    }
    for (const g of gateways) expect(g.child.exitCode).toBeNull();
    await Promise.all(gateways.splice(0).map((g) => g.stop('SIGKILL')));
    await pgServer.stop();
    return admitted;
  }

  it('two processes admit at most max_exposure_usd for one account in all while PostgreSQL is out', async () => {
    // 3 X for the account across both processes (6 when each counted alone)
    expect(await outage(REDIS_TEST_URL, async () => undefined)).toBe(3);
  });

  it('Redis restarted without its data during the outage: no second allowance', async () => {
    const admitted = await outage(redisServer.url, async (urls, key) => {
      await redisServer.stop();
      // Grace counts in Redis: without it every paid request is refused, and /readyz says so (it said
      // 200 "degraded", outside check).
      for (const url of urls)
        await until(
          async () => {
            const ready = await readyz(url);
            return ready.status === 503 && ready.json.status === 'unavailable' && ready.json.redis === 'unavailable';
          },
          10_000,
          'not ready without Redis',
        );
      await redisServer.start(); // empty
      // Each process refuses (store_unavailable) until the fleet trusts the new Redis, then finds the
      // count its processes put back: grace_exposure, not a fresh allowance.
      for (const url of urls)
        await until(
          async () => {
            const answer = await chatReason(url, key, 100);
            expect(answer.status).toBe(503);
            expect(['redis_unavailable', 'redis_resyncing', 'grace_exposure']).toContain(answer.reason);
            return answer.reason === 'grace_exposure';
          },
          30_000,
          'the count restored',
        );
      const again = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(urls[i % 2]!, key, 200 + i)));
      expect(again.filter((s) => s === 200)).toEqual([]);
    });
    expect(admitted).toBe(3);
  });
});
