/**
 * The operator's view: the built `tollgate serve` process in demo mode, restart, logs, graceful
 * shutdown, configuration errors, and PostgreSQL mode with two processes starting together.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgTestSchema, type PgTestSchema } from './helpers/pg.js';
import { buildOnce, runCli, startServe } from './helpers/process.js';
import { parseSse } from './helpers/gateway.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { openSqliteStore } from '../src/store/open-store.js';

async function post(url: string, key: string, body: unknown) {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

describe('tollgate serve (process)', { timeout: 90_000 }, () => {
  let dir: string;
  beforeAll(async () => {
    await buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-proc-'));
  }, 120_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('demo mode: prints a working key once, answers the printed request, logs no secret, restarts without a new key', async () => {
    const dataDir = join(dir, 'demo');
    const first = await startServe({ TOLLGATE_DATA_DIR: dataDir, TOLLGATE_LOG_LEVEL: 'info' });
    try {
      const key = /sk-tg-v1-[0-9a-f]{64}/.exec(first.stdout())?.[0];
      expect(key).toBeDefined();
      expect(first.stdout()).toContain('curl ');
      const answer = await post(first.url, key!, {
        model: 'tollgate/demo-chat',
        messages: [{ role: 'user', content: 'Hello!' }],
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).choices[0].message.content.length).toBeGreaterThan(0);
      const typo = `${key!.slice(0, -1)}${key!.endsWith('0') ? '1' : '0'}`;
      const bad = await post(first.url, typo, {
        model: 'tollgate/demo-chat',
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(bad.status).toBe(401);
      const health = await request(`${first.url}/healthz`);
      expect(health.statusCode).toBe(200);
      await health.body.dump();
      // The printed API reference and its OpenAPI document answer.
      const reference = /API reference: (\S+)\/docs \(OpenAPI 3\.1: (\S+)\)/.exec(first.stdout());
      expect(reference).not.toBeNull();
      const openapi = await request(reference![2]!);
      expect(openapi.statusCode).toBe(200);
      expect(((await openapi.body.json()) as { openapi: string }).openapi).toBe('3.1.0');
      const docsPage = await request(`${reference![1]}/docs`);
      expect(docsPage.statusCode).toBe(200);
      expect(docsPage.headers['content-type']).toMatch(/^text\/html/);
      await docsPage.body.dump();
      const metrics = await request(`${first.url}/metrics`);
      const text = await metrics.body.text();
      expect(text).toContain('tollgate_http_requests_total');
      expect(text).toContain('tollgate_completions_total');
      // The one charged answer waited once for its charge to be durable.
      expect(text).toMatch(/^tollgate_settle_wait_seconds_count 1$/m);
      // JSON logs name the key by its hash prefix and never contain the key itself (beyond the one-time banner).
      const logLines = first
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'));
      expect(logLines.length).toBeGreaterThan(0);
      expect(logLines.join('\n')).not.toContain(key!);
      expect(logLines.some((l) => /"key":"[0-9a-f]{12}"/.test(l))).toBe(true);
      expect(first.stderr()).not.toContain(key!);
      // The demo model lists what the simulator honours, and honours it: `stop` ends the answer.
      const models = await request(`${first.url}/api/v1/models`);
      const demo = ((await models.body.json()) as { data: { id: string; supported_parameters: string[] }[] }).data.find(
        (model) => model.id === 'tollgate/demo-chat',
      );
      expect(demo?.supported_parameters).toEqual(expect.arrayContaining(['max_tokens', 'stop']));
      for (const unheeded of ['tools', 'tool_choice', 'response_format'])
        expect(demo?.supported_parameters).not.toContain(unheeded);
      const stopped = await post(first.url, key!, {
        model: 'tollgate/demo-chat',
        messages: [{ role: 'user', content: 'Hello!' }],
        stop: [' fox'],
      });
      expect(JSON.parse(stopped.text).choices[0]).toMatchObject({
        message: { content: 'The quick brown' },
        finish_reason: 'stop',
      });
    } finally {
      expect(await first.stop()).toBe(0);
    }
    const second = await startServe({ TOLLGATE_DATA_DIR: dataDir });
    try {
      expect(second.stdout()).not.toMatch(/sk-tg-v1-[0-9a-f]{64}/);
      expect(second.stdout()).toContain('already exists');
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it('reports every configuration problem at once and exits 78', async () => {
    const config = join(dir, 'bad.yaml');
    await writeFile(config, 'providers:\n  - { id: "Bad Id", name: x, kind: nope }\nmodels: []\n');
    const result = await runCli(['serve'], {
      TOLLGATE_CONFIG: config,
      PORT: 'eighty',
      TOLLGATE_DATA_DIR: join(dir, 'bad'),
      // An unknown log level is one more problem reported (it used to crash the boot with pino's message, exit 1).
      TOLLGATE_LOG_LEVEL: 'bogus',
    });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('providers.0.id');
    expect(result.stderr).toContain('providers.0.kind');
    expect(result.stderr).toContain('PORT');
    expect(result.stderr).toContain('TOLLGATE_LOG_LEVEL');
  });

  it('a data directory that is a file is a configuration problem (exit 78), not a crash', async () => {
    const file = join(dir, 'not-a-directory');
    await writeFile(file, 'x');
    const result = await runCli(['serve'], { TOLLGATE_DATA_DIR: file, PORT: '0' });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain(`env TOLLGATE_DATA_DIR: ${file} cannot be created as a directory`);
  });

  it('the data directory is private to its owner: created 0700, narrowed to 0700 when wider', async () => {
    const wide = join(dir, 'wide-data');
    await mkdir(wide, { mode: 0o755 });
    await chmod(wide, 0o755);
    const fresh = join(dir, 'fresh-data');
    for (const dataDir of [wide, fresh]) {
      const gw = await startServe({ TOLLGATE_DATA_DIR: dataDir });
      try {
        expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
      } finally {
        expect(await gw.stop()).toBe(0);
      }
    }
  });

  it('refuses to start on a database file it cannot open, saying why, and exits 1', async () => {
    const dataDir = join(dir, 'broken-db');
    await mkdir(dataDir, { recursive: true });
    await writeFile(join(dataDir, 'tollgate.db'), randomBytes(8192));
    const result = await runCli(['serve'], { TOLLGATE_DATA_DIR: dataDir, PORT: '0' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `tollgate: The embedded store cannot open ${join(dataDir, 'tollgate.db')}: file is not a database`,
    );
  });

  describe('with a config file', () => {
    let provider: MockProvider;
    let configPath: string;
    beforeAll(async () => {
      provider = await startMockProvider();
      configPath = join(dir, 'tollgate.yaml');
      await writeFile(
        configPath,
        [
          'providers:',
          `  - { id: sim, name: Simulator, kind: openai, base_url: "${provider.url}", api_key: "\${SIM_KEY}" }`,
          'models:',
          '  - id: sim/paced',
          '    name: Paced',
          '    context_length: 4096',
          '    endpoints: [{ provider: sim, model: "mock@tps=20,tokens=30", pricing: { prompt: "0.000001", completion: "0.000002" } }]',
          'server: { shutdown_grace_ms: 10000 }',
          '',
        ].join('\n'),
      );
    });
    afterAll(() => provider.close());

    it('graceful shutdown lets an in-flight stream finish, commits its charge, then exits 0', async () => {
      const dataDir = join(dir, 'graceful');
      const env = {
        TOLLGATE_CONFIG: configPath,
        SIM_KEY: 'sim-secret',
        TOLLGATE_DATA_DIR: dataDir,
        TOLLGATE_ADMIN_TOKEN: 'admin-token-for-tests-0001',
        TOLLGATE_LOG_LEVEL: 'warn',
      };
      const gw = await startServe(env);
      const cli = (...args: string[]) =>
        runCli([...args, '--json', '--url', gw.url], { TOLLGATE_ADMIN_TOKEN: env.TOLLGATE_ADMIN_TOKEN });
      const account = JSON.parse((await cli('accounts', 'create', '--email', 'graceful@example.test')).stdout).data
        .id as string;
      // A credit replayed with its reference changes nothing, and the CLI says so (it printed the same as a new one).
      const human = (...args: string[]) =>
        runCli([...args, '--url', gw.url], { TOLLGATE_ADMIN_TOKEN: env.TOLLGATE_ADMIN_TOKEN });
      const credit = ['credits', 'add', '--account', account, '--amount', '5', '--reference', 'invoice-1'];
      expect((await human(...credit)).stdout).not.toContain('recorded before');
      expect((await human(...credit)).stdout).toContain('reference "invoice-1" was recorded before: nothing changed');
      const key = JSON.parse((await cli('keys', 'create', '--account', account, '--name', 'g')).stdout).key as string;

      const streaming = post(gw.url, key, {
        model: 'sim/paced',
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      });
      await new Promise((r) => setTimeout(r, 400));
      gw.child.kill('SIGTERM');
      const result = await streaming;
      const sse = parseSse(result.text);
      expect(result.status).toBe(200);
      expect(sse.done).toBe(true);
      expect(sse.events.at(-1).usage.completion_tokens).toBe(30);
      expect(await gw.exited).toBe(0);
      expect(gw.stdout() + gw.stderr()).not.toContain('sim-secret');
      // Run from a config file, stdout is JSON lines only (the listening record included), for a log shipper.
      const lines = gw
        .stdout()
        .split('\n')
        .filter((line) => line !== '');
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
      expect(lines.some((line) => line.includes('Tollgate listening on'))).toBe(true);

      const store = openSqliteStore(join(dataDir, 'tollgate.db'));
      try {
        const generation = await store.getGeneration(sse.events[0].id);
        expect(generation?.tokensCompletion).toBe(30);
        const fetched = await store.getAccount(account);
        expect(fetched!.totalUsage).toBe(generation!.totalCost);
      } finally {
        await store.close();
      }
    });

    it('the CLI manages accounts, credits and keys over the admin API', async () => {
      const env = {
        TOLLGATE_CONFIG: configPath,
        SIM_KEY: 'sim-secret',
        TOLLGATE_DATA_DIR: join(dir, 'cli'),
        TOLLGATE_ADMIN_TOKEN: 'admin-token-for-tests-0002',
        TOLLGATE_LOG_LEVEL: 'warn',
      };
      const gw = await startServe(env);
      try {
        const run = (...args: string[]) =>
          runCli([...args, '--url', gw.url], { TOLLGATE_ADMIN_TOKEN: env.TOLLGATE_ADMIN_TOKEN });
        const created = await run('accounts', 'create', '--email', 'cli@example.test', '--json');
        expect(created.code).toBe(0);
        const account = JSON.parse(created.stdout).data.id as string;
        const credits = await run(
          'credits',
          'add',
          '--account',
          account,
          '--amount',
          '2.5',
          '--kind',
          'purchase',
          '--reference',
          'order-1',
        );
        expect(credits.code).toBe(0);
        expect(credits.stdout).toContain('balance 2.5 USD');
        const again = await run(
          'credits',
          'add',
          '--account',
          account,
          '--amount',
          '2.5',
          '--kind',
          'purchase',
          '--reference',
          'order-1',
          '--json',
        );
        expect(JSON.parse(again.stdout).data.balance).toBe(2.5);
        const key = await run(
          'keys',
          'create',
          '--account',
          account,
          '--name',
          'cli key',
          '--limit',
          '1',
          '--limit-reset',
          'monthly',
        );
        expect(key.code).toBe(0);
        const plaintext = /sk-tg-v1-[0-9a-f]{64}/.exec(key.stdout)![0];
        const hash = /hash: ([0-9a-f]{64})/.exec(key.stdout)![1]!;
        const listed = await run('keys', 'list', '--account', account, '--json');
        expect(JSON.parse(listed.stdout).data.map((k: { hash: string }) => k.hash)).toContain(hash);
        expect(listed.stdout).not.toContain(plaintext);
        // The plain listing says the limit's window too (outside check: `limit=1`, its reset unsaid).
        expect((await run('keys', 'list', '--account', account)).stdout).toContain('limit=1/monthly');
        expect((await run('keys', 'disable', hash)).code).toBe(0);
        expect(
          (await post(gw.url, plaintext, { model: 'sim/paced', messages: [{ role: 'user', content: 'x' }] })).status,
        ).toBe(401);
        expect((await run('keys', 'enable', hash)).code).toBe(0);
        expect(
          (await post(gw.url, plaintext, { model: 'sim/paced', messages: [{ role: 'user', content: 'x' }] })).status,
        ).toBe(200);
        expect((await run('keys', 'delete', hash)).code).toBe(0);
        expect(
          (await post(gw.url, plaintext, { model: 'sim/paced', messages: [{ role: 'user', content: 'x' }] })).status,
        ).toBe(401);
        const wrongToken = await runCli(['accounts', 'get', account, '--url', gw.url], {
          TOLLGATE_ADMIN_TOKEN: 'not-the-token-at-all',
        });
        expect(wrongToken.code).toBe(2);
        expect(wrongToken.stderr).toContain('Invalid admin token');
        const usage = await runCli(['keys', 'frobnicate'], {});
        expect(usage.code).toBe(2);
      } finally {
        expect(await gw.stop()).toBe(0);
      }
    });

    describe('on PostgreSQL', () => {
      let schema: PgTestSchema;
      beforeAll(async () => {
        schema = await createPgTestSchema();
      });
      afterAll(() => schema.drop());

      it('two processes start together on one database, migrate once, and share keys (change bus invalidation)', async () => {
        const databaseUrl = `${schema.url}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`;
        const env = {
          TOLLGATE_CONFIG: configPath,
          SIM_KEY: 'sim-secret',
          DATABASE_URL: databaseUrl,
          TOLLGATE_ADMIN_TOKEN: 'admin-token-for-tests-0003',
          TOLLGATE_LOG_LEVEL: 'warn',
        };
        const [a, b] = await Promise.all([startServe(env), startServe(env)]);
        try {
          const run = (url: string, ...args: string[]) =>
            runCli([...args, '--json', '--url', url], { TOLLGATE_ADMIN_TOKEN: env.TOLLGATE_ADMIN_TOKEN });
          const account = JSON.parse((await run(a.url, 'accounts', 'create', '--email', 'pg@example.test')).stdout).data
            .id as string;
          await run(a.url, 'credits', 'add', '--account', account, '--amount', '1');
          const created = JSON.parse(
            (await run(a.url, 'keys', 'create', '--account', account, '--name', 'shared')).stdout,
          );
          const body = { model: 'sim/paced', messages: [{ role: 'user', content: 'x' }] };
          expect((await post(b.url, created.key, body)).status).toBe(200); // cached on b now
          await run(a.url, 'keys', 'disable', created.data.hash);
          // b learns of the change through LISTEN/NOTIFY, well before its cache TTL (30 s) runs out.
          let status = 200;
          for (let i = 0; i < 40 && status === 200; i++) {
            await new Promise((r) => setTimeout(r, 100));
            status = (await post(b.url, created.key, body)).status;
          }
          expect(status).toBe(401);
        } finally {
          expect(await a.stop()).toBe(0);
          expect(await b.stop()).toBe(0);
        }
      });
    });
  });
});
