/**
 * `npm run test:cluster` (README "Scaling out"): three `tollgate serve` processes on one private
 * PostgreSQL database and one private Redis, behind nginx running deploy/nginx.conf, with the
 * project's mock provider as upstream. 1,000 concurrent mixed requests (streamed and not, paid and
 * `:free`, several keys and accounts) while one gateway is killed with SIGKILL and restarted,
 * PostgreSQL is stopped for 20 s and Redis is restarted (empty). Then every money invariant is checked to
 * the unit, and a table is printed. Exit code 1 when an invariant fails.
 *
 * Private servers, never the machine's: PostgreSQL from Debian's binaries (initdb into a temp dir,
 * run as the postgres user), redis-server and nginx on free ports; everything is stopped and removed
 * whatever happens.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import { RedisHoldStore } from '../billing/redis-hold-store.js';
import { startMockProvider, type MockProvider } from '../providers/mock-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const ADMIN = `cluster-admin-${randomBytes(8).toString('hex')}`;
const GATEWAYS = 3;
const REQUESTS = 1_000;
const LOAD_MS = 32_000;
/** How long PostgreSQL stays stopped in the middle of the load. */
const PG_OUTAGE_MS = 20_000;
/** One fixed-cost request: 10 completion tokens × 0.0001 USD = 0.001 USD = 1,000,000 units. */
const X_UNITS = 1_000_000n;
const FREE_PER_MINUTE = 20;
const OVERSPEND_BALANCE_X = 10n;
/** The capacity limit (requests per minute) of one endpoint, enforced across the three processes. */
const CAPACITY_RPM = 30;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function fixedModel(id: string, upstream: string) {
  return {
    id,
    name: id,
    context_length: 8192,
    endpoints: [
      {
        provider: 'mock',
        model: upstream,
        pricing: { prompt: '0', completion: '0.0001' },
        max_completion_tokens: 1024,
      },
    ],
  };
}

/** Everything started, for the cleanup in `finally`. */
const cleanups: Array<() => Promise<unknown>> = [];

async function privatePostgres(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const versions = readdirSync('/usr/lib/postgresql').sort();
  const bin = `/usr/lib/postgresql/${versions[versions.length - 1]}/bin`;
  // Its own temp directory, owned by the postgres user (the run's directory is private to root).
  const pgDir = await mkdtemp(join(tmpdir(), 'tollgate-cluster-pg-'));
  cleanups.push(() => rm(pgDir, { recursive: true, force: true }));
  const { uid, gid } = await stat('/var/lib/postgresql');
  await chown(pgDir, uid, gid);
  const data = join(pgDir, 'data');
  const port = await freePort();
  const asPostgres = (args: string[]) => run('runuser', ['-u', 'postgres', '--', ...args], { timeout: 120_000 });
  await asPostgres([`${bin}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres']);
  const ctl = (args: string[]) => asPostgres([`${bin}/pg_ctl`, '-D', data, ...args]);
  const start = () =>
    ctl([
      '-o',
      `-p ${port} -k ${pgDir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
      '-l',
      join(pgDir, 'log'),
      '-w',
      'start',
    ]);
  await start();
  cleanups.push(() => ctl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined));
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    // Fast shutdown: every connection is terminated, as in a restart or a failover.
    stop: async () => void (await ctl(['-m', 'fast', '-w', 'stop'])),
    start: async () => void (await start()),
  };
}

async function privateRedis(dir: string): Promise<{ url: string; restart(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      const ok = await run('redis-cli', ['-p', String(port), 'ping']).then(
        (r) => r.stdout.trim() === 'PONG',
        () => false,
      );
      if (ok) return;
      await sleep(50);
    }
    throw new Error('redis-server did not start');
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL'); // no persistence: it comes back empty
    await exited;
  };
  await start();
  cleanups.push(stop);
  return {
    url: `redis://127.0.0.1:${port}`,
    async restart() {
      await stop();
      await sleep(1_000);
      await start();
    },
  };
}

/** nginx from Debian with deploy/nginx.conf, its listen port and upstream servers rewritten. */
async function startNginx(dir: string, ports: number[]): Promise<string> {
  const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path));
  if (!nginx) throw new Error('nginx is not installed (apt-get install -y nginx; .ci/run does it)');
  const port = await freePort();
  const site = (await readFile(join(ROOT, 'deploy/nginx.conf'), 'utf8'))
    .replace(
      /(upstream tollgate \{)[\s\S]*?(keepalive)/,
      `$1\n${ports.map((p) => `    server 127.0.0.1:${p} max_fails=0;`).join('\n')}\n    $2`,
    )
    .replace(/listen 8080;/, `listen 127.0.0.1:${port};`);
  const prefix = join(dir, 'nginx');
  await mkdir(join(prefix, 'logs'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  const temp = (name: string) => `${name}_temp_path ${join(prefix, name)};`;
  await writeFile(
    conf,
    `daemon off;\nworker_processes 1;\npid ${join(prefix, 'nginx.pid')};\nerror_log ${join(prefix, 'logs/error.log')} warn;\n` +
      `events { worker_connections 4096; }\nhttp {\n  access_log off;\n  ${temp('client_body')}\n  ${temp('proxy')}\n  ${temp('fastcgi')}\n  ${temp('uwsgi')}\n  ${temp('scgi')}\n${site}\n}\n`,
  );
  const child = spawn(nginx, ['-p', prefix, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  cleanups.push(async () => {
    if (child.exitCode !== null) return;
    // SIGTERM: the master stops its worker, then exits. A SIGKILLed master left its worker running
    // (holding the port) after every run.
    const exited = new Promise<boolean>((resolve) => child.once('exit', () => resolve(true)));
    child.kill('SIGTERM');
    if (!(await Promise.race([exited, sleep(5_000).then(() => false)]))) child.kill('SIGKILL');
  });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
    const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return `http://127.0.0.1:${port}`;
    await sleep(50);
  }
  throw new Error(`nginx did not answer: ${stderr}`);
}

interface Gateway {
  port: number;
  url: string;
  child: ChildProcess;
  output: string;
}

async function startGateway(port: number, env: Record<string, string>, dataDir: string): Promise<Gateway> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/tollgate.js'), 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      HOST: '127.0.0.1',
      PORT: String(port),
      TOLLGATE_DATA_DIR: dataDir,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const gateway: Gateway = { port, url: `http://127.0.0.1:${port}`, child, output: '' };
  const keep = (d: Buffer) => (gateway.output = (gateway.output + d.toString()).slice(-20_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`gateway on ${port} exited: ${gateway.output}`);
    if (/Tollgate listening on/.test(gateway.output)) return gateway;
    await sleep(50);
  }
  throw new Error(`gateway on ${port} did not start: ${gateway.output}`);
}

async function readyz(url: string): Promise<string> {
  return fetch(`${url}/readyz`).then(
    async (r) => ((await r.json()) as { status: string }).status,
    () => 'down',
  );
}

async function waitAllReady(gateways: Gateway[], timeoutMs: number): Promise<number> {
  const started = Date.now();
  while ((await Promise.all(gateways.map((g) => readyz(g.url)))).some((s) => s !== 'ready')) {
    if (Date.now() - started > timeoutMs) throw new Error('gateways not ready in time');
    await sleep(200);
  }
  return Date.now() - started;
}

async function admin<T>(url: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const response = await request(`${url}/api/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const json = (await response.body.json()) as T;
  if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${JSON.stringify(json)}`);
  return json;
}

async function newAccount(url: string, usd: number, keys: number): Promise<{ id: string; keys: string[] }> {
  const account = await admin<{ data: { id: string } }>(url, 'POST', '/accounts', {
    email: `cluster-${randomBytes(5).toString('hex')}@example.test`,
  });
  if (usd > 0) await admin(url, 'POST', `/accounts/${account.data.id}/credits`, { amount: usd, kind: 'grant' });
  const out: string[] = [];
  for (let i = 0; i < keys; i++)
    out.push((await admin<{ key: string }>(url, 'POST', `/accounts/${account.data.id}/keys`, { name: `k${i}` })).key);
  return { id: account.data.id, keys: out };
}

type Kind = 'paid' | 'paid-stream' | 'free' | 'capped';

interface Outcome {
  kind: Kind;
  status: number;
  /** The generation id the answer carried (JSON `id`, or the first stream chunk's). */
  id: string | null;
  /** A JSON answer, or a stream that reached `[DONE]`. */
  complete: boolean;
}

async function chat(base: string, dispatcher: Agent, key: string, kind: Kind, i: number): Promise<Outcome> {
  const model = {
    free: 'cluster/chat:free',
    paid: 'cluster/fixed',
    'paid-stream': 'cluster/stream',
    capped: 'cluster/capped',
  }[kind];
  const body = {
    model,
    messages: [{ role: 'user', content: `cluster ${i}` }],
    max_tokens: 10,
    ...(kind === 'paid-stream' ? { stream: true } : {}),
  };
  try {
    const response = await request(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    // Read as it arrives: a stream cut by the killed gateway still shows the id it carried.
    let text = '';
    let cutShort = false;
    try {
      for await (const chunk of response.body) text += (chunk as Buffer).toString();
    } catch {
      cutShort = true;
    }
    if (response.statusCode !== 200) return { kind, status: response.statusCode, id: null, complete: false };
    if (kind !== 'paid-stream') {
      if (cutShort) return { kind, status: 200, id: null, complete: false };
      const parsed = JSON.parse(text) as { id?: string; choices?: unknown[] };
      return { kind, status: 200, id: parsed.id ?? null, complete: Array.isArray(parsed.choices) };
    }
    const first = /^data: (\{.*\})$/m.exec(text);
    const id = first ? ((JSON.parse(first[1]!) as { id?: string }).id ?? null) : null;
    const errored = /^data: \{"error"/m.test(text) || /"finish_reason":"error"/.test(text);
    return { kind, status: 200, id, complete: !cutShort && /^data: \[DONE\]$/m.test(text) && !errored };
  } catch {
    return { kind, status: 0, id: null, complete: false }; // connection cut (the killed gateway)
  }
}

/** One query on a connection of its own (PostgreSQL is restarted during the run). */
async function query<T extends pg.QueryResultRow>(
  url: string,
  text: string,
  params: unknown[],
): Promise<pg.QueryResult<T>> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await client.query<T>(text, params);
  } finally {
    await client.end().catch(() => undefined);
  }
}

interface Row {
  check: string;
  value: string;
  ok: boolean;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-cluster-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  let provider: MockProvider | null = null;
  const rows: Row[] = [];
  const events: string[] = [];
  const t0 = Date.now();
  const log = (line: string) => {
    events.push(`${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s  ${line}`);
    console.log(`[cluster] ${line}`);
  };
  try {
    const [postgres, redis] = await Promise.all([privatePostgres(), privateRedis(dir)]);
    provider = await startMockProvider();
    const prefix = `tollgate:cluster:${randomBytes(4).toString('hex')}:`;
    const config = {
      providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
      models: [
        fixedModel('cluster/fixed', 'mock@latency=30'),
        fixedModel('cluster/stream', 'mock@tps=5'), // 10 tokens: a 2 s stream
        {
          ...fixedModel('cluster/capped', 'mock@latency=30'),
          endpoints: [{ ...fixedModel('x', 'mock@latency=30').endpoints[0]!, limits: { rpm: CAPACITY_RPM } }],
        },
        {
          id: 'cluster/chat:free',
          name: 'free',
          context_length: 8192,
          endpoints: [{ provider: 'mock', model: 'mock@latency=20', pricing: { prompt: '0', completion: '0' } }],
        },
      ],
      limits: { edge: { burst: 0 }, redis_prefix: prefix, free_models: { per_minute: FREE_PER_MINUTE, per_day: 1000 } },
      server: { trust_proxy: 1 },
      // Paid requests are served through the database outage within each account's grace exposure, and
      // charged from the journal once it returns (README "The charge journal and store outages").
      billing: {
        on_store_error: 'grace',
        grace: { max_exposure_usd: 5, max_duration_ms: 60_000 },
        journal: { checkpoint_ms: 500 },
      },
    };
    const configPath = join(dir, 'tollgate.json');
    await writeFile(configPath, JSON.stringify(config));
    const env = {
      TOLLGATE_CONFIG: configPath,
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    const ports = await Promise.all(Array.from({ length: GATEWAYS }, () => freePort()));
    const dataDirs = ports.map((p) => join(dir, `data-${p}`));
    const gateways: Gateway[] = [];
    for (let i = 0; i < GATEWAYS; i++) gateways.push(await startGateway(ports[i]!, env, dataDirs[i]!));
    const base = await startNginx(dir, ports);
    await waitAllReady(gateways, 30_000);
    log(`3 gateways ready behind nginx (${base}); PostgreSQL ${postgres.url}, Redis ${redis.url}`);

    // Accounts: four paid ones with two keys each, two free-only ones; balances read before the load.
    const paid = await Promise.all([1, 2, 3, 4].map(() => newAccount(base, 100, 2)));
    const free = await Promise.all([1, 2].map(() => newAccount(base, 0, 1)));
    const db = {
      query: <T extends pg.QueryResultRow>(text: string, params: unknown[]) => query<T>(postgres.url, text, params),
    };
    const usageOf = async (ids: string[]) =>
      new Map(
        (
          await db.query<{ id: string; total_usage: string }>(
            'SELECT id, total_usage FROM accounts WHERE id = ANY($1)',
            [ids],
          )
        ).rows.map((r) => [r.id, BigInt(r.total_usage)]),
      );
    const accountIds = [...paid, ...free].map((a) => a.id);
    const usageBefore = await usageOf(accountIds);

    // The load: REQUESTS spread evenly over LOAD_MS, all concurrent with the faults below.
    const dispatcher = new Agent({ connections: 2_000, pipelining: 1 });
    const outcomes: Array<Promise<Outcome>> = [];
    const load = (async () => {
      for (let i = 0; i < REQUESTS; i++) {
        const r = i % 20;
        const kind: Kind = r < 11 ? 'paid' : r < 17 ? 'paid-stream' : 'free';
        const account = kind === 'free' ? free[i % free.length]! : paid[i % paid.length]!;
        outcomes.push(chat(base, dispatcher, account.keys[i % account.keys.length]!, kind, i));
        await sleep(LOAD_MS / REQUESTS);
      }
    })();

    const faults = (async () => {
      await sleep(2_000);
      const victim = gateways[0]!;
      victim.child.kill('SIGKILL');
      log(`SIGKILL gateway :${victim.port}`);
      await sleep(1_000);
      const restarting = startGateway(victim.port, env, dataDirs[0]!).then((g) => {
        gateways[0] = g;
        log(`gateway :${victim.port} restarted on its data directory (journal replayed)`);
      });
      await sleep(2_000);
      log(`PostgreSQL stopped (fast shutdown: connections terminated) for ${PG_OUTAGE_MS / 1000} s`);
      await postgres.stop();
      await sleep(PG_OUTAGE_MS);
      await postgres.start();
      log('PostgreSQL back');
      await restarting;
      await sleep(3_000);
      log('Redis restart (killed; it comes back empty)');
      await redis.restart();
      log('Redis back, empty');
    })();

    await Promise.all([load, faults]);
    const results = await Promise.all(outcomes);
    log(`load done: ${results.length} requests`);
    const recoveredIn = await waitAllReady(gateways, 60_000);
    log(`all gateways ready again after ${recoveredIn} ms`);

    // Let journals drain and holds of the killed process lapse (TTL 10 s), then check.
    const holds = new RedisHoldStore({ url: redis.url, keyPrefix: `${prefix}hold:` });
    await holds.ready();
    let stuck = 0n;
    for (let i = 0; i < 60; i++) {
      stuck = 0n;
      for (const id of accountIds) stuck += await holds.held(id, Date.now());
      if (stuck === 0n) break;
      await sleep(500);
    }
    await sleep(1_000);

    const statusCounts = new Map<string, number>();
    for (const r of results)
      statusCounts.set(`${r.kind} ${r.status}`, (statusCounts.get(`${r.kind} ${r.status}`) ?? 0) + 1);
    const complete = results.filter((r) => r.status === 200 && r.complete && r.id !== null && r.kind !== 'free');
    const cut = results.filter((r) => r.status === 200 && !r.complete && r.kind === 'paid-stream');
    const generations = await db.query<{ id: string; total_cost: string; account_id: string }>(
      'SELECT id, total_cost, account_id FROM generations WHERE account_id = ANY($1)',
      [accountIds],
    );
    const charged = new Map(generations.rows.map((g) => [g.id, BigInt(g.total_cost)]));
    const uncharged = complete.filter((r) => !charged.has(r.id!));
    const wrongAmount = complete.filter((r) => charged.has(r.id!) && charged.get(r.id!) !== X_UNITS);
    const cutCharged = cut.filter((r) => r.id !== null && charged.has(r.id)).length;
    const sumGenerations = generations.rows.reduce((sum, g) => sum + BigInt(g.total_cost), 0n);
    const keyUsage = await db.query<{ sum: string | null }>(
      "SELECT SUM(u.usage) AS sum FROM key_usage u JOIN api_keys k ON k.hash = u.key_hash WHERE u.period = 'all' AND k.account_id = ANY($1)",
      [accountIds],
    );
    const sumKeys = BigInt(keyUsage.rows[0]?.sum ?? '0');
    const usageAfter = await usageOf(accountIds);
    const sumAccounts = accountIds.reduce((sum, id) => sum + (usageAfter.get(id)! - usageBefore.get(id)!), 0n);
    const answered = results.filter((r) => r.status === 200).length;

    rows.push({
      check: 'requests: answered 200 / total',
      value: `${answered} / ${results.length}  (${[...statusCounts]
        .sort()
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')})`,
      ok: answered > 0,
    });
    rows.push({
      check: 'Σ generation costs = Σ key usage = Σ account usage change',
      value: `${sumGenerations} = ${sumKeys} = ${sumAccounts} units`,
      ok: sumGenerations === sumKeys && sumKeys === sumAccounts,
    });
    rows.push({
      check: 'complete paid answers charged exactly once (X each)',
      value: `${complete.length - uncharged.length - wrongAmount.length} / ${complete.length}`,
      ok: uncharged.length === 0 && wrongAmount.length === 0,
    });
    rows.push({
      check: 'streams cut by SIGKILL, charged from checkpoints',
      value: `${cutCharged} / ${cut.length}`,
      ok: true,
    });
    rows.push({ check: 'holds left in Redis after recovery', value: `${stuck} units`, ok: stuck === 0n });

    // Free-model admissions across the three processes: exactly the per-minute limit.
    await sleep(1_000);
    const freeAccount = await newAccount(base, 0, 2);
    const freeBurst = await Promise.all(
      Array.from({ length: FREE_PER_MINUTE * 3 }, (_, i) =>
        chat(base, dispatcher, freeAccount.keys[i % 2]!, 'free', i),
      ),
    );
    const freeAdmitted = freeBurst.filter((r) => r.status === 200).length;
    rows.push({
      check: `free-model admissions, ${FREE_PER_MINUTE * 3} requests over 3 processes`,
      value: `${freeAdmitted} (limit ${FREE_PER_MINUTE})`,
      ok: freeAdmitted === FREE_PER_MINUTE,
    });

    // The overspend bound: 500 concurrent requests against credit worth 10.
    const tight = await newAccount(base, Number(OVERSPEND_BALANCE_X) / 1000, 1);
    const tightBurst = await Promise.all(
      Array.from({ length: 500 }, (_, i) => chat(base, dispatcher, tight.keys[0]!, 'paid', i)),
    );
    const tightAdmitted = tightBurst.filter((r) => r.status === 200).length;
    const tightBalance = await admin<{ data: { balance: number } }>(base, 'GET', `/accounts/${tight.id}`);
    const balanceUnits = BigInt(Math.round(tightBalance.data.balance * 1e9));
    rows.push({
      check: '500 concurrent against credit worth 10 (bound: 9..10 admitted, balance ≥ 0)',
      value: `${tightAdmitted} admitted, balance ${balanceUnits} units`,
      ok:
        tightAdmitted <= 10 &&
        tightAdmitted >= 9 &&
        balanceUnits === (OVERSPEND_BALANCE_X - BigInt(tightAdmitted)) * X_UNITS,
    });
    // A capacity limit of 30 requests per minute on one endpoint, over the three processes.
    const cappedBurst = await Promise.all(
      Array.from({ length: CAPACITY_RPM * 3 }, (_, i) =>
        chat(base, dispatcher, paid[i % paid.length]!.keys[0]!, 'capped', i),
      ),
    );
    const cappedAdmitted = cappedBurst.filter((r) => r.status === 200).length;
    const cappedRefused = cappedBurst.filter((r) => r.status === 429).length;
    rows.push({
      check: `capacity limit ${CAPACITY_RPM} rpm, ${CAPACITY_RPM * 3} concurrent over 3 processes`,
      value: `${cappedAdmitted} admitted, ${cappedRefused} × 429`,
      ok: cappedAdmitted === CAPACITY_RPM && cappedRefused === CAPACITY_RPM * 2,
    });
    await holds.close();
    await dispatcher.close();

    const width = Math.max(...rows.map((r) => r.check.length));
    console.log(
      `\nTollgate cluster run: 3 processes behind nginx, SIGKILL + PostgreSQL stopped ${PG_OUTAGE_MS / 1000} s + Redis restart under load\n`,
    );
    for (const line of events) console.log(`  ${line}`);
    console.log('');
    console.log(`| ${'check'.padEnd(width)} | result | figures`);
    console.log(`|${'-'.repeat(width + 2)}|--------|--------`);
    for (const row of rows)
      console.log(`| ${row.check.padEnd(width)} | ${row.ok ? 'ok    ' : 'FAILED'} | ${row.value}`);
    if (rows.some((r) => !r.ok)) {
      for (const g of gateways) console.log(`--- gateway :${g.port} output (tail) ---\n${g.output.slice(-3_000)}`);
      process.exitCode = 1;
    }
  } finally {
    await provider?.close();
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

// Whatever ends the run early, the private servers and processes go too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all(cleanups.reverse().map((cleanup) => cleanup().catch(() => undefined))).finally(() =>
      process.exit(130),
    );
  });
}

await main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
