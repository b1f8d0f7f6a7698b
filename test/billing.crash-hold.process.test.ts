/**
 * A fleet process SIGKILLed mid-stream after a checkpoint journaled part of the stream's charge
 * (README "Guarantees about money"). Outside check: its hold lapsed after the hold TTL, the other
 * processes admitted against the credit it had held, and its restart then replayed the checkpoint on
 * top — a balance 3.3× past the stated bound. Now each checkpoint keeps the hold counted by the fleet
 * until the restarted process's replay turns it into the charge.
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
import { fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { deleteKeys, REDIS_TEST_URL } from './helpers/limiter-targets.js';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';
import { adminClient, buildOnce, type ServeProcess, startServe, waitReady } from './helpers/process.js';

const ADMIN = 'admin-token-for-crash-hold-01';
const HOLD_TTL_MS = 1_000;

const admin = adminClient(ADMIN);

async function post(url: string, key: string, body: Record<string, unknown>) {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('a killed fleet process keeps the holds of its journaled charges', { timeout: 90_000 }, () => {
  let dir: string;
  let victimData: string;
  let provider: MockProvider;
  let schema: PgTestSchema;
  let prefix: string;
  let holds: RedisHoldStore;
  let env: Record<string, string>;
  const gateways: ServeProcess[] = [];

  beforeAll(async () => {
    const built = buildOnce();
    [dir, victimData, provider, schema] = await Promise.all([
      mkdtemp(join(tmpdir(), 'tollgate-crash-hold-')),
      mkdtemp(join(tmpdir(), 'tollgate-crash-hold-victim-')),
      startMockProvider(),
      createPgTestSchema(),
    ]);
    prefix = `tollgate:test:${randomBytes(6).toString('hex')}:`;
    const config = {
      providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
      // 10 tokens at 4 a second: a 2.5 s stream; a checkpoint every 200 ms.
      models: [fixedCostModel('test/fixed', 'mock@latency=50'), fixedCostModel('test/slow', 'mock@tps=4')],
      limits: { edge: { burst: 0 }, redis_prefix: prefix },
      billing: { hold_ttl_ms: HOLD_TTL_MS, journal: { checkpoint_ms: 200 } },
    };
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(configPath, stringify(config));
    await built;
    env = {
      TOLLGATE_CONFIG: configPath,
      DATABASE_URL: `${schema.url}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`,
      REDIS_URL: REDIS_TEST_URL,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    gateways.push(await startServe({ ...env, TOLLGATE_DATA_DIR: victimData }), await startServe(env));
    await Promise.all(gateways.map((g) => waitReady(g.url)));
    holds = new RedisHoldStore({ url: REDIS_TEST_URL, keyPrefix: `${prefix}hold:` });
    await holds.ready();
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.stop('SIGKILL')));
    await holds?.close();
    await deleteKeys(REDIS_TEST_URL, prefix);
    await Promise.allSettled([
      provider?.close(),
      schema?.drop(),
      rm(dir, { recursive: true, force: true }),
      rm(victimData, { recursive: true, force: true }),
    ]);
  });

  it('the others count the hold past its TTL until the restarted process replays the charge', async () => {
    const [victim, other] = gateways as [ServeProcess, ServeProcess];
    const account = await admin(other.url, 'POST', '/accounts', {
      email: `crash-${randomBytes(4).toString('hex')}@example.test`,
    });
    const accountId = account.data.id as string;
    await admin(other.url, 'POST', `/accounts/${accountId}/credits`, { amount: X_USD, kind: 'grant' });
    const key = (await admin(other.url, 'POST', `/accounts/${accountId}/keys`, { name: 'crash' })).key as string;
    const balance = async () =>
      Math.round((await admin(other.url, 'GET', `/accounts/${accountId}`)).data.balance * 1e9);

    const streaming = post(victim.url, key, fixedBody('test/slow', 0, { stream: true })).catch(() => null);
    await waitFor(async () => (await holds.held(accountId, Date.now())) === BigInt(X_UNITS), 3_000);
    // A second or so in: a few tokens delivered, and journaled by checkpoints.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    victim.child.kill('SIGKILL');
    await victim.exited;
    await streaming;

    // Well past the hold TTL: the hold is still counted, so the other process admits nothing paid.
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 3));
    expect(await holds.held(accountId, Date.now())).toBe(BigInt(X_UNITS));
    expect((await post(other.url, key, fixedBody('test/fixed', 1))).status).toBe(402);
    expect(await balance()).toBe(X_UNITS);

    // The victim comes back on its own data: its replay charges what the stream delivered, and the
    // hold becomes that charge in the same step.
    gateways[0] = await startServe({ ...env, TOLLGATE_DATA_DIR: victimData });
    await waitReady(gateways[0].url);
    await waitFor(async () => (await holds.held(accountId, Date.now())) === 0n, 5_000);
    const charged = X_UNITS - (await balance());
    console.log(`[crash-hold] replay charged ${charged} units of a ${X_UNITS}-unit hold`);
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThan(X_UNITS);
  });
});
