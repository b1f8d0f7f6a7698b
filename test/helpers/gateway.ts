/**
 * A real gateway for integration tests: the simulated provider on a loopback port, buildApp on
 * another, either store. Accounts and keys are made through the admin API over HTTP, as an operator
 * would.
 */
import { request } from 'undici';
import { buildApp, type AppDeps, type Gateway } from '../../src/app.js';
import { LocalChangeBus } from '../../src/core/change-bus.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Config } from '../../src/config/schema.js';
import { startMockProvider, type MockProvider } from '../../src/providers/mock-server.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { UpstreamAgents } from '../../src/routing/upstream-client.js';
import type { Store } from '../../src/store/types.js';
import { ChargeJournal } from '../../src/billing/charge-journal.js';
import type { StoreDatabase, StoreTarget } from './store-targets.js';
import { stringify } from 'yaml';
import { buildOpenApiDocument } from '../../src/http/openapi.js';
import { ResponseChecker } from './openapi-check.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };

/** A provider entry of the test YAML (the config schema validates it for real). */
export interface TestProvider {
  id: string;
  name: string;
  kind: string;
  base_url: string;
  api_key?: string;
  timeouts: Partial<typeof FAST>;
  stream_upstream?: boolean;
  [other: string]: unknown;
}

/** Models of the test catalog. Upstream model names carry mock scripts (see src/providers/mock/script.ts). */
export function testCatalog(mockUrl: string, extraModels: unknown[] = []) {
  const paid = { prompt: '0.000001', completion: '0.000002' };
  const model = (id: string, upstream: string, pricing = paid, provider = 'mock') => ({
    id,
    name: id,
    context_length: 8192,
    endpoints: [{ provider, model: upstream, pricing, max_completion_tokens: 1024 }],
  });
  return {
    providers: [
      { id: 'mock', name: 'Mock', kind: 'openai', base_url: mockUrl, api_key: 'upstream-secret-key', timeouts: FAST },
      {
        id: 'mock-b',
        name: 'Mock B',
        kind: 'openai',
        base_url: mockUrl,
        api_key: 'upstream-secret-key-b',
        timeouts: FAST,
      },
    ] as TestProvider[],
    models: [
      model('test/chat', 'mock-chat'),
      model('test/chat:free', 'mock-chat', { prompt: '0', completion: '0' }),
      model('test/paced', 'mock@tps=200'),
      model('test/slow-first-token', 'mock@ttft=700'),
      model('test/no-usage', 'mock@usage=false'),
      model('test/drop', 'mock@behavior=drop,breakAfter=3,tps=100'),
      model('test/stall', 'mock@behavior=stall,breakAfter=3'),
      model('test/malformed', 'mock@behavior=malformed,breakAfter=2'),
      model('test/no-done', 'mock@behavior=no_done'),
      model('test/rate-limited', 'mock@status=429,retryAfter=7'),
      model('test/server-error', 'mock@status=500'),
      model('test/bad-request', 'mock@status=400,message=bad%20parameter'),
      model('test/context', 'mock@behavior=context_length'),
      model('test/endless', 'mock@tps=50,tokens=10000'),
      {
        id: 'test/failover',
        name: 'failover',
        context_length: 8192,
        endpoints: [
          { provider: 'mock', model: 'mock@status=503', pricing: { prompt: '0.000001', completion: '0.000002' } },
          { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
        ],
      },
      ...extraModels,
    ],
    server: { keep_alive_interval_ms: 200, shutdown_grace_ms: 2000, body_limit_bytes: 256 * 1024, trust_proxy: false },
    routing: {
      max_attempts: 4,
      retry_backoff_ms: 20,
      budget_ms: 15_000,
      breaker: { failure_threshold: 1000, open_ms: 1000, max_open_ms: 2000 },
    },
    // The per-IP edge guard is off here: suites burst hundreds of requests from 127.0.0.1. test/limits.edge.test.ts turns it on.
    limits: { edge: { burst: 0 } } as Record<string, unknown>,
  };
}

export interface TestGatewayOptions {
  target: StoreTarget;
  extraModels?: unknown[];
  configure?: (file: ReturnType<typeof testCatalog>) => void;
  /** Extra environment for loadConfig (e.g. TOLLGATE_MASTER_KEY). */
  env?: Record<string, string>;
  /** Reuse an existing database instead of a fresh one (e.g. to restart a gateway on the same data). */
  database?: StoreDatabase;
  /** Default: the system clock. */
  clock?: Clock;
  /** Free-model rate-limit counters (default: in-process); the caller closes them. */
  rateLimiter?: AppDeps['rateLimiter'];
  /** In-flight credit holds (default: in-process); the caller closes them. */
  holds?: AppDeps['holds'];
  /** Wraps the store the gateway sees (e.g. to make it fail), not the one `gw.store` returns. */
  wrapStore?: (store: Store) => Store;
  logger?: AppDeps['logger'];
  /** The change bus (default: in-process); the caller closes it. */
  bus?: AppDeps['bus'];
  /** Open a charge journal in this directory (as `tollgate serve` does in TOLLGATE_DATA_DIR/journal); closed by `close()`. */
  journalDir?: string;
  /** The dashboard's files (default: whatever `dist/web` holds). */
  web?: AppDeps['web'];
}

export interface TestGateway {
  url: string;
  api: string; // url + /api/v1
  gateway: Gateway;
  config: Config;
  store: Store;
  provider: MockProvider;
  database: StoreDatabase;
  createAccount(credits?: number, kind?: 'grant' | 'purchase'): Promise<string>;
  createKey(accountId: string, body?: Record<string, unknown>): Promise<{ key: string; hash: string }>;
  /** Answers that did not match the OpenAPI document; `close()` fails when there are any. */
  contractViolations: string[];
  admin(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
}

let accountCounter = 0;

export async function startTestGateway(options: TestGatewayOptions): Promise<TestGateway> {
  const provider = await startMockProvider();
  const file = testCatalog(provider.url, options.extraModels);
  options.configure?.(file);
  const config = loadConfig(
    { TOLLGATE_CONFIG: 'test.yaml', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, PORT: '0', ...options.env },
    () => stringify(file),
  );
  const database = options.database ?? (await options.target.createDatabase());
  const store = database.openStore();
  await store.migrate();
  const catalog = buildCatalog(config);
  const agents = new UpstreamAgents(catalog.providers.values());
  const journal = options.journalDir
    ? (await ChargeJournal.open(options.journalDir, { now: () => (options.clock ?? systemClock).now() })).journal
    : null;
  const gateway = buildApp({
    config,
    store: options.wrapStore ? options.wrapStore(store) : store,
    catalog,
    bus: options.bus ?? new LocalChangeBus(),
    clock: options.clock ?? systemClock,
    dispatcherFor: agents.dispatcherFor,
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
    ...(options.holds ? { holds: options.holds } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(journal ? { journal, dataDir: options.journalDir! } : {}),
    ...(options.web ? { web: options.web } : {}),
  });
  const contractViolations = checkResponsesAgainstOpenApi(gateway);
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });

  async function admin(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) {
    const response = await request(`${url}/api/v1/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.statusCode, json: (await response.body.json()) as any };
  }

  return {
    url,
    api: `${url}/api/v1`,
    gateway,
    config,
    store,
    provider,
    database,
    admin,
    async createAccount(credits = 10, kind = 'grant') {
      const created = await admin('POST', '/accounts', {
        email: `user${process.pid}-${++accountCounter}-${Date.now()}@example.test`,
      });
      if (created.status !== 201) throw new Error(`account creation failed: ${JSON.stringify(created.json)}`);
      if (credits !== 0) {
        const added = await admin('POST', `/accounts/${created.json.data.id}/credits`, { amount: credits, kind });
        if (added.status !== 201) throw new Error(`credits failed: ${JSON.stringify(added.json)}`);
      }
      return created.json.data.id as string;
    },
    async createKey(accountId, body = {}) {
      const created = await admin('POST', `/accounts/${accountId}/keys`, { name: 'test key', ...body });
      if (created.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(created.json)}`);
      return { key: created.json.key as string, hash: created.json.data.hash as string };
    },
    contractViolations,
    async close() {
      await gateway.shutdown(2000);
      await journal?.close();
      await agents.close();
      await provider.close();
      // A borrowed database belongs to whoever created it.
      if (options.database) await store.close();
      else await database.cleanup();
      if (contractViolations.length > 0)
        throw new Error(
          `Answers that do not match the OpenAPI document (GET /api/v1/openapi.json):\n${[...new Set(contractViolations)].join('\n')}`,
        );
    },
  };
}

const checkers = new WeakMap<Gateway, ResponseChecker>();

/** The gateway's OpenAPI document as a checker, built once every route is registered. */
function checkerFor(gateway: Gateway): ResponseChecker {
  let checker = checkers.get(gateway);
  if (!checker) {
    checker = new ResponseChecker(buildOpenApiDocument(gateway.routes.declarations(), 'test'));
    checkers.set(gateway, checker);
  }
  return checker;
}

/**
 * Every answer this gateway gives through Fastify (all but the hijacked event streams) is checked
 * against the OpenAPI document; what does not match is collected and fails `close()`.
 */
function checkResponsesAgainstOpenApi(gateway: Gateway): string[] {
  const violations: string[] = [];
  gateway.app.addHook('onSend', async (request, reply, payload) => {
    // HEAD answers (Fastify's, for every GET) carry no body; preflights belong to the CORS plugin.
    if (request.method === 'HEAD' || request.method === 'OPTIONS') return payload;
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload) && payload !== null) return payload;
    const problem = checkerFor(gateway).check(
      request.method,
      request.routeOptions.url ?? null,
      reply.statusCode,
      String(reply.getHeader('content-type') ?? ''),
      payload === null ? '' : payload.toString(),
    );
    if (problem) violations.push(problem);
    return payload;
  });
  return violations;
}

/** POST /chat/completions with a key; returns status, headers and parsed JSON (non-streaming). */
export async function chat(
  gw: TestGateway,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const response = await request(`${gw.api}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    text,
    json: text.startsWith('{') ? JSON.parse(text) : null,
  };
}

export interface SseResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  comments: string[];
  events: any[];
  done: boolean;
  raw: string;
}

/** A streaming chat request read to the end and split into events. */
export async function chatStream(gw: TestGateway, key: string, body: Record<string, unknown>): Promise<SseResult> {
  const response = await request(`${gw.api}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const raw = await response.body.text();
  const parsed = parseSse(raw);
  // The stream is written past Fastify: its events are checked against the document here.
  if (response.statusCode === 200)
    for (const event of parsed.events) {
      const problem = checkerFor(gw.gateway).checkEvent('POST', '/api/v1/chat/completions', event);
      if (problem) gw.contractViolations.push(problem);
    }
  return { status: response.statusCode, headers: response.headers, ...parsed, raw };
}

export function parseSse(raw: string): { comments: string[]; events: any[]; done: boolean } {
  const comments: string[] = [];
  const events: any[] = [];
  let done = false;
  for (const block of raw.split('\n\n')) {
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments.push(line);
      else if (line.startsWith('data: ')) {
        const data = line.slice(6);
        if (data === '[DONE]') done = true;
        else events.push(JSON.parse(data));
      }
    }
  }
  return { comments, events, done };
}

export async function getJson(gw: TestGateway, path: string, key?: string) {
  const response = await request(`${gw.api}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text ? JSON.parse(text) : null };
}

// --- Money and generation helpers (chat and billing suites) ---

/** USD as a JSON number → integer nano-USD, so sums and comparisons are exact (never sum floats). */
export function toUnits(usd: number): number {
  return Math.round(usd * 1e9);
}

/** The account's balance in nano-USD, read through the admin API. */
export async function balanceUnits(gw: TestGateway, accountId: string): Promise<number> {
  const account = await gw.admin('GET', `/accounts/${accountId}`);
  if (account.status !== 200) throw new Error(`account read failed: ${JSON.stringify(account.json)}`);
  return toUnits(account.json.data.balance as number);
}

/** GET /generation, retried until it exists (for outcomes settled after the caller left). */
export async function waitForGeneration(gw: TestGateway, id: string, key: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const generation = await getJson(gw, `/generation?id=${encodeURIComponent(id)}`, key);
    if (generation.status === 200 || Date.now() > deadline) return generation;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
