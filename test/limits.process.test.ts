/**
 * Free-model limits across real `tollgate serve` processes: three gateways sharing one PostgreSQL
 * schema and one Redis enforce an account's 20 requests per minute together; a gateway whose Redis
 * is unreachable boots, says how it fails at boot, reports not ready, and fails free requests closed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { deleteKeys, REDIS_TEST_URL, uniqueTestPrefix } from './helpers/limiter-targets.js';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';
import { buildOnce, startServe, waitForOutput, waitReady, type ServeProcess } from './helpers/process.js';

const ADMIN = 'admin-token-for-limits-0001';
const FREE = { model: 'sim/chat:free', messages: [{ role: 'user', content: 'hi' }] };

async function call(url: string, method: 'GET' | 'POST', path: string, token: string, body?: unknown) {
  const response = await request(`${url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    json: text.startsWith('{') ? JSON.parse(text) : null,
  };
}

async function newAccountKey(url: string): Promise<string> {
  const account = await call(url, 'POST', '/admin/accounts', ADMIN, {
    email: `limits-${Date.now()}-${Math.random()}@example.test`,
  });
  expect(account.status).toBe(201);
  expect(
    (await call(url, 'POST', `/admin/accounts/${account.json.data.id}/credits`, ADMIN, { amount: 1, kind: 'grant' }))
      .status,
  ).toBe(201);
  const key = await call(url, 'POST', `/admin/accounts/${account.json.data.id}/keys`, ADMIN, { name: 'k' });
  expect(key.status).toBe(201);
  return key.json.key as string;
}

describe('free-model limits across gateway processes', { timeout: 90_000 }, () => {
  let dir: string;
  let provider: MockProvider;
  let schema: PgTestSchema;
  let configPath: string;
  const prefix = uniqueTestPrefix();

  beforeAll(async () => {
    await buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-limits-'));
    provider = await startMockProvider();
    schema = await createPgTestSchema();
    configPath = join(dir, 'tollgate.yaml');
    await writeFile(
      configPath,
      [
        'providers:',
        `  - { id: sim, name: Simulator, kind: openai, base_url: "${provider.url}", api_key: sim-key }`,
        'models:',
        '  - id: sim/chat:free',
        '    name: Free chat',
        '    context_length: 4096',
        '    endpoints: [{ provider: sim, model: mock-chat, pricing: { prompt: "0", completion: "0" } }]',
        `limits: { redis_prefix: "${prefix}" }`,
        '',
      ].join('\n'),
    );
  }, 120_000);

  afterAll(async () => {
    await deleteKeys(REDIS_TEST_URL, prefix);
    await schema?.drop();
    await provider?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('three processes sharing Redis admit exactly 20 of 30 free requests of one account in a minute', async () => {
    const databaseUrl = `${schema.url}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`;
    const env = {
      TOLLGATE_CONFIG: configPath,
      DATABASE_URL: databaseUrl,
      REDIS_URL: REDIS_TEST_URL,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'info',
    };
    const gateways: ServeProcess[] = await Promise.all([startServe(env), startServe(env), startServe(env)]);
    try {
      for (const gw of gateways) {
        await waitForOutput(gw, /free-model rate limits: counters in Redis, shared by every process; .*fail closed/);
        await waitReady(gw.url);
        const ready = await call(gw.url, 'GET', '/../../readyz', '');
        expect(ready.status).toBe(200);
        expect(ready.json).toMatchObject({ status: 'ready', store: 'postgres', redis: 'ok' });
      }
      const key = await newAccountKey(gateways[0]!.url);
      const before = provider.stats.requests;
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => call(gateways[i % 3]!.url, 'POST', '/chat/completions', key, FREE)),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.filter((s) => s === 429)).toHaveLength(10);
      expect(provider.stats.requests - before).toBe(20);
      for (const refused of results.filter((r) => r.status === 429)) {
        expect(refused.headers['x-ratelimit-limit']).toBe('20');
        expect(refused.headers['x-ratelimit-remaining']).toBe('0');
        expect(refused.json.error.metadata.limit_source).toBe('free_model_per_minute');
      }
      // Every process sees the same daily count.
      for (const gw of gateways)
        expect((await call(gw.url, 'GET', '/key', key)).json.data.free_model_daily_requests).toEqual({
          limit: 50,
          used: 20,
          remaining: 30,
        });
      // Another account is untouched, on any process.
      const other = await newAccountKey(gateways[1]!.url);
      expect((await call(gateways[2]!.url, 'POST', '/chat/completions', other, FREE)).status).toBe(200);
    } finally {
      for (const code of await Promise.all(gateways.map((gw) => gw.stop()))) expect(code).toBe(0);
    }
  });

  it('Redis unreachable: the process still boots, logs the fail-closed choice, is not ready, and refuses free requests with 503', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const gw = await startServe({
      TOLLGATE_CONFIG: configPath,
      TOLLGATE_DATA_DIR: join(dir, 'no-redis'),
      REDIS_URL: `redis://127.0.0.1:${port}`,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'info',
    });
    try {
      await waitForOutput(gw, /Redis \(REDIS_URL\) is unreachable at boot; free-model requests fail closed/);
      await waitForOutput(gw, /if the counter store is unreachable, free-model requests fail closed/);
      expect((await call(gw.url, 'GET', '/../../readyz', '')).status).toBe(503);
      const key = await newAccountKey(gw.url);
      const before = provider.stats.requests;
      const refused = await call(gw.url, 'POST', '/chat/completions', key, FREE);
      expect(refused.status).toBe(503);
      expect(provider.stats.requests).toBe(before);
    } finally {
      const code = await gw.stop();
      if (code !== 0) console.log(code, gw.child.signalCode, gw.stdout(), gw.stderr());
      expect(code).toBe(0);
    }
  });
});
