/**
 * Issue 12, failover: the model the caller asked for comes first, timeouts that fit the model, and
 * continuation only where the operator declared prefill. Real HTTP against the simulated provider;
 * each case names what `GET /generation`'s `provider_responses` shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config/load-config.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { adapterFor } from '../src/providers/registry.js';
import { buildCatalog } from '../src/routing/catalog.js';
import { executeCompletion, HAMMER_WINDOW_MS, type ExecuteDeps } from '../src/routing/execute.js';
import { HealthRegistry } from '../src/routing/health.js';
import { planAttempts } from '../src/routing/plan.js';
import { createUpstreamAgent } from '../src/routing/upstream-client.js';
import { chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Prefer what I asked for.' }];
const PRICE = { prompt: '0.000001', completion: '0.000002' };

const MODELS = [
  {
    id: 'fo/429-once',
    name: '429 once',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'fo-a@status=429,retryAfter=1,failFirst=1', pricing: PRICE }],
  },
  {
    id: 'fo/500-once',
    name: '500 once',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'fo-b@status=500,failFirst=1', pricing: PRICE }],
  },
  {
    id: 'fo/503-hint-once',
    name: '503 with a 1 s Retry-After once',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'fo-f@status=503,retryAfter=1,failFirst=1', pricing: PRICE }],
  },
  {
    id: 'fo/503-hint-long',
    name: '503 with a 30 s Retry-After once',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'fo-g@status=503,retryAfter=30,failFirst=1', pricing: PRICE }],
  },
  {
    id: 'fo/reset-once',
    name: 'reset once',
    context_length: 8192,
    endpoints: [{ provider: 'mock', model: 'fo-c@behavior=reset,failFirst=1', pricing: PRICE }],
  },
  {
    id: 'fo/silent',
    name: 'first token after 20 s',
    context_length: 8192,
    // The model's own first-token limit overrides the provider's (2 s in the test catalog).
    timeouts: { first_token_ms: 300 },
    endpoints: [{ provider: 'mock', model: 'fo-d@ttft=20000', pricing: PRICE }],
  },
  {
    id: 'fo/stall',
    name: 'stalls after 3 chunks',
    context_length: 8192,
    // The endpoint's idle limit overrides its provider's 30 s.
    endpoints: [
      { provider: 'patient', model: 'fo-e@behavior=stall,breakAfter=3', pricing: PRICE, timeouts: { idle_ms: 300 } },
    ],
  },
];

describe('failover prefers the requested model', () => {
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: MODELS,
      configure: (file) => {
        file.providers.push({
          id: 'patient',
          name: 'Patient',
          kind: 'openai',
          base_url: file.providers[0]!.base_url,
          api_key: 'k',
          timeouts: { idle_ms: 30_000, first_token_ms: 30_000 },
        });
      },
    });
    const account = await gw.createAccount(10);
    key = (await gw.createKey(account)).key;
  }, 30_000);
  afterAll(async () => gw?.close());

  async function responses(id: string): Promise<[string, number | null][]> {
    const g = await getJson(gw, `/generation?id=${id}`, key);
    expect(g.status).toBe(200);
    return (g.json.data.provider_responses as { provider_name: string; status: number | null }[]).map((r) => [
      r.provider_name,
      r.status,
    ]);
  }

  it('a 429 whose Retry-After fits max_retry_wait_ms is waited for on the requested model, not handed to the fallback model', async () => {
    const r = await chat(gw, key, { model: 'fo/429-once', models: ['fo/429-once', 'test/chat'], messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('fo/429-once');
    expect(await responses(r.json.id)).toEqual([
      ['Mock', 429],
      ['Mock', 200],
    ]);
  }, 15_000);

  it('a 500 once is retried on the requested model after a short backoff', async () => {
    const r = await chat(gw, key, { model: 'fo/500-once', models: ['fo/500-once', 'test/chat'], messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('fo/500-once');
    expect(await responses(r.json.id)).toEqual([
      ['Mock', 500],
      ['Mock', 200],
    ]);
  }, 15_000);

  it('a 503 saying when it will be back is retried after that time, not after the backoff', async () => {
    const started = Date.now();
    const r = await chat(gw, key, {
      model: 'fo/503-hint-once',
      models: ['fo/503-hint-once', 'test/chat'],
      messages: MESSAGES,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('fo/503-hint-once');
    expect(await responses(r.json.id)).toEqual([
      ['Mock', 503],
      ['Mock', 200],
    ]);
    // The retry came after the hint (1 s), not after the ~250 ms backoff of a 5xx without one.
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  }, 15_000);

  it('a 503 whose Retry-After is past max_retry_wait_ms is not asked again: the fallback model answers', async () => {
    const r = await chat(gw, key, {
      model: 'fo/503-hint-long',
      models: ['fo/503-hint-long', 'test/chat'],
      messages: MESSAGES,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
    expect(await responses(r.json.id)).toEqual([
      ['Mock', 503],
      ['Mock', 200],
    ]);
  }, 15_000);

  it('a reset once is retried on the requested model, streamed too', async () => {
    const s = await chatStream(gw, key, {
      model: 'fo/reset-once',
      models: ['fo/reset-once', 'test/chat'],
      messages: MESSAGES,
      stream: true,
    });
    expect(s.status).toBe(200);
    for (const event of s.events) expect(event.model).toBe('fo/reset-once');
    expect(await responses(s.events[0].id)).toEqual([
      ['Mock', null],
      ['Mock', 200],
    ]);
  }, 15_000);

  it('a silent requested model is given up on at its own first-token limit and not waited for twice while a fallback model can answer', async () => {
    const r = await chat(gw, key, { model: 'fo/silent', models: ['fo/silent', 'test/chat'], messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
    expect(await responses(r.json.id)).toEqual([
      ['Mock', null],
      ['Mock', 200],
    ]);
  }, 15_000);

  it("a stall mid-stream ends at the endpoint's own idle limit with an in-band error", async () => {
    const s = await chatStream(gw, key, { model: 'fo/stall', messages: MESSAGES, stream: true });
    expect(s.status).toBe(200);
    const last = s.events.at(-1);
    expect(last.choices[0].finish_reason).toBe('error');
    expect(last.error.metadata.error_type).toBe('timeout');
    expect(s.done).toBe(true);
  }, 15_000);
});

describe('the execute loop never hammers one endpoint', () => {
  let mock: MockProvider;
  const agent = createUpstreamAgent();
  beforeAll(async () => {
    mock = await startMockProvider();
  });
  afterAll(async () => {
    await agent.close();
    await mock.close();
  });

  it(`gives no endpoint a third attempt within ${HAMMER_WINDOW_MS} ms of the one before the last`, async () => {
    const file = {
      providers: [
        {
          id: 'only',
          name: 'Only',
          kind: 'openai',
          base_url: mock.url,
          api_key: 'k',
          timeouts: { connect_ms: 1000, first_token_ms: 1000, idle_ms: 1000, response_ms: 2000 },
        },
      ],
      models: [
        {
          id: 'h/down',
          name: 'down',
          context_length: 8192,
          endpoints: [{ provider: 'only', model: 'mock@status=503', pricing: PRICE }],
        },
      ],
    };
    const catalog = buildCatalog(loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(file)));
    let clock = 1_000_000;
    const sent: number[] = [];
    const health = new HealthRegistry({ failureThreshold: 100, openMs: 1000, maxOpenMs: 2000, probeTimeoutMs: 60_000 });
    const deps: ExecuteDeps = {
      dispatcherFor: () => agent,
      adapterFor,
      now: () => clock,
      health,
      policy: { maxAttempts: 5, budgetMs: 60_000, triesPerEndpoint: 4, retryBackoffMs: 20, maxRetryWaitMs: 3000 },
      sleep: (ms) => {
        clock += ms;
        return Promise.resolve();
      },
      random: () => 0,
    };
    const plan = planAttempts(
      catalog,
      { model: 'h/down' },
      { allowedModels: null, allowedProviders: null },
      health,
      clock,
    );
    const before = mock.stats.requests;
    const outcome = await executeCompletion(
      {
        ...deps,
        adapterFor: (kind) => ({
          ...adapterFor(kind),
          buildRequest: (...args) => (sent.push(clock), adapterFor(kind).buildRequest(...args)),
        }),
      },
      { plan, body: { model: 'h/down', messages: MESSAGES }, signal: new AbortController().signal },
    );
    expect(outcome.ok).toBe(false);
    expect(mock.stats.requests - before).toBe(4);
    expect(sent).toHaveLength(4);
    for (let i = 2; i < sent.length; i++) expect(sent[i]! - sent[i - 2]!).toBeGreaterThanOrEqual(HAMMER_WINDOW_MS);
    // Equal jitter: even with the random source at 0, the first retry waits half the base backoff.
    expect(sent[1]! - sent[0]!).toBe(10);
  });
});

describe('timeouts per model and endpoint', () => {
  const base = (extra: Record<string, unknown> = {}) => ({
    providers: [
      { id: 'p', name: 'P', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k' },
      { id: 'anth', name: 'Anth', kind: 'anthropic', base_url: 'http://127.0.0.1:9', api_key: 'k' },
    ],
    models: [
      {
        id: 'x/m',
        name: 'm',
        context_length: 8192,
        timeouts: { first_token_ms: 60_000 },
        endpoints: [
          { provider: 'p', model: 'm', pricing: PRICE },
          {
            provider: 'anth',
            model: 'm',
            pricing: PRICE,
            timeouts: { first_token_ms: 90_000, idle_ms: 5_000 },
            supports_prefill: true,
          },
        ],
      },
      {
        id: 'x/plain',
        name: 'plain',
        context_length: 8192,
        endpoints: [
          { provider: 'p', model: 'm', pricing: PRICE },
          { provider: 'anth', model: 'm', pricing: PRICE },
        ],
      },
    ],
    ...extra,
  });

  it('defaults give up on silence in about 10 s, to first token and mid-stream; continuation is on', () => {
    const config = loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(base()));
    const plain = buildCatalog(config).models.get('x/plain')!;
    expect(plain.endpoints[0]!.timeouts).toEqual({
      connect_ms: 10_000,
      first_token_ms: 10_000,
      idle_ms: 10_000,
      response_ms: 300_000,
    });
    expect(config.routing.mid_stream_continuation).toBe(true);
    expect(config.routing.adaptive_first_token).toEqual({
      enabled: true,
      multiplier: 3,
      min_samples: 20,
      max_ms: 120_000,
    });
  });

  it('the endpoint overrides the model, which overrides the provider', () => {
    const catalog = buildCatalog(loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(base())));
    const [openai, anthropic] = catalog.models.get('x/m')!.endpoints;
    expect(openai!.timeouts).toMatchObject({ first_token_ms: 60_000, idle_ms: 10_000 });
    expect(anthropic!.timeouts).toMatchObject({ first_token_ms: 90_000, idle_ms: 5_000, connect_ms: 10_000 });
  });

  it('only endpoints that declare supports_prefill are ever sent a prefill, whatever the provider kind', () => {
    const catalog = buildCatalog(loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(base())));
    expect(catalog.models.get('x/plain')!.endpoints.map((e) => e.supportsPrefill)).toEqual([false, false]);
    expect(catalog.models.get('x/m')!.endpoints.map((e) => e.supportsPrefill)).toEqual([false, true]);
  });

  it('an unknown timeout field is a config error', () => {
    const file = base();
    (file.models[0] as Record<string, unknown>).timeouts = { first_token: 5 };
    expect(() => loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(file))).toThrow(/first_token/);
  });
});
