/**
 * In-flight holds shared through Redis by several `tollgate serve` processes on one PostgreSQL
 * database (docs/api.md; README "Guarantees about money").
 *
 * Stated bound (same as one process, because holds and settled charges are shared atomically):
 * with the estimate equal to the real cost X and a balance of n·X, a burst spread over every process
 * admits ≤ n (final balance ≥ 0) and ≥ n − 1.
 * Also: a process killed with SIGKILL mid-request leaves a hold that lapses within its TTL, while a
 * live process keeps renewing the holds of its long requests.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisHoldStore } from '../src/billing/redis-hold-store.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { burst, fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { deleteKeys, REDIS_TEST_URL } from './helpers/limiter-targets.js';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';
import { adminClient, buildOnce, type ServeProcess, startServe, waitReady } from './helpers/process.js';

const ADMIN = 'admin-token-for-hold-tests-01';
const HOLD_TTL_MS = 1_000;
const BURST = 500;
const N = 10;

const admin = adminClient(ADMIN);

async function accountWithKey(url: string, usd: number): Promise<{ accountId: string; key: string }> {
  const account = await admin(url, 'POST', '/accounts', {
    email: `holds-${randomBytes(4).toString('hex')}@example.test`,
  });
  const accountId = account.data.id as string;
  await admin(url, 'POST', `/accounts/${accountId}/credits`, { amount: usd, kind: 'grant' });
  const key = await admin(url, 'POST', `/accounts/${accountId}/keys`, { name: 'holds' });
  return { accountId, key: key.key as string };
}

async function balanceUnits(url: string, accountId: string): Promise<number> {
  return Math.round((await admin(url, 'GET', `/accounts/${accountId}`)).data.balance * 1e9);
}

async function post(url: string, key: string, body: Record<string, unknown>) {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Date.now() - started;
}

describe('in-flight holds across gateway processes (Redis + PostgreSQL)', { timeout: 60_000 }, () => {
  let dir: string;
  let provider: MockProvider;
  let schema: PgTestSchema;
  let prefix: string;
  let holds: RedisHoldStore;
  let gateways: ServeProcess[] = [];

  beforeAll(async () => {
    const built = buildOnce();
    [dir, provider, schema] = await Promise.all([
      mkdtemp(join(tmpdir(), 'tollgate-holds-')),
      startMockProvider(),
      createPgTestSchema(),
    ]);
    prefix = `tollgate:test:${randomBytes(6).toString('hex')}:`;
    const config = {
      providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
      models: [fixedCostModel('test/fixed', 'mock@latency=100'), fixedCostModel('test/slow', 'mock@tps=4')],
      limits: { edge: { burst: 0 }, redis_prefix: prefix },
      billing: { hold_ttl_ms: HOLD_TTL_MS },
    };
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(configPath, stringify(config));
    await built;
    const databaseUrl = `${schema.url}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`;
    const env = {
      TOLLGATE_CONFIG: configPath,
      DATABASE_URL: databaseUrl,
      REDIS_URL: REDIS_TEST_URL,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    gateways = await Promise.all([startServe(env), startServe(env), startServe(env)]);
    await Promise.all(gateways.map((g) => waitReady(g.url)));
    holds = new RedisHoldStore({ url: REDIS_TEST_URL, keyPrefix: `${prefix}hold:` });
    await holds.ready();
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.stop('SIGKILL')));
    await holds?.close();
    await deleteKeys(REDIS_TEST_URL, prefix);
    await Promise.allSettled([provider?.close(), schema?.drop(), rm(dir, { recursive: true, force: true })]);
  });

  it(`${BURST} concurrent requests over 3 processes against a balance worth ${N} admit ${N} (bound: ${N - 1}..${N}, final balance ≥ 0)`, async () => {
    const { accountId, key } = await accountWithKey(gateways[0]!.url, N * X_USD);
    const result = await burst(
      gateways.map((g) => g.url),
      key,
      'test/fixed',
      BURST,
    );
    const balance = await balanceUnits(gateways[1]!.url, accountId);
    console.log(
      `[holds] redis x3: admitted ${result.admitted}/${BURST}, statuses ${JSON.stringify([...result.statuses])}, final balance ${balance} units`,
      result.others,
    );

    // On an overloaded machine a Redis call may time out: that request fails closed (503), and can
    // have cost at most one admission slot. Nothing else is an acceptable answer.
    const failedClosed = result.statuses.get(503) ?? 0;
    expect(result.admitted + (result.statuses.get(402) ?? 0) + failedClosed).toBe(BURST);
    for (const other of result.others) expect(other).toMatch(/^503 .*unavailable/);
    expect(result.admitted).toBeLessThanOrEqual(N);
    expect(result.admitted).toBeGreaterThanOrEqual(N - 1 - failedClosed);
    expect(balance).toBe(N * X_UNITS - result.admitted * X_UNITS);
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(await holds.held(accountId, Date.now())).toBe(0n);

    // At once again, while every process still has the balance snapshot of before the burst (2 s TTL):
    // the charges settled since are counted through the shared counters, so nothing more gets in.
    const again = await burst(
      gateways.map((g) => g.url),
      key,
      'test/fixed',
      60,
    );
    expect(again.admitted).toBe(0);
    expect(await balanceUnits(gateways[2]!.url, accountId)).toBe(balance);
  });

  it('a killed process leaves its hold until the TTL; a live one renews its holds past it', async () => {
    const [victim, other] = gateways as [ServeProcess, ServeProcess];
    const { accountId, key } = await accountWithKey(victim.url, X_USD); // worth exactly one request
    // 10 tokens at 4 per second: a 2.5 s stream, longer than the hold TTL.
    const streaming = post(victim.url, key, fixedBody('test/slow', 0, { stream: true })).catch(
      (error: unknown) => error,
    );
    await waitFor(async () => (await holds.held(accountId, Date.now())) === BigInt(X_UNITS), 3_000);

    // The other process counts the victim's hold: nothing left for a paid request.
    expect((await post(other.url, key, fixedBody('test/fixed', 1))).status).toBe(402);
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 1.5));
    expect(await holds.held(accountId, Date.now())).toBe(BigInt(X_UNITS)); // renewed while the stream runs
    expect((await post(other.url, key, fixedBody('test/fixed', 2))).status).toBe(402);

    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    const lapsedAfter = await waitFor(async () => (await holds.held(accountId, Date.now())) === 0n, HOLD_TTL_MS * 3);
    console.log(`[holds] hold of the killed process lapsed ${lapsedAfter} ms after SIGKILL (TTL ${HOLD_TTL_MS} ms)`);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(HOLD_TTL_MS + 500); // TTL + polling slack
    await streaming;

    // Nothing was charged for the killed stream, and the credit is usable again from the other process.
    expect((await post(other.url, key, fixedBody('test/fixed', 3))).status).toBe(200);
    expect(await balanceUnits(other.url, accountId)).toBe(0);
  });
});
