/**
 * Failover scenarios (issue 4, "Done means"; docs/api.md and §2.4), through real HTTP against the
 * simulated provider. Every endpoint is its own simulated-provider instance, so each case shows
 * what the caller got, how many attempts each endpoint saw, and how long it took:
 *
 *   A "Primary A"  — the misbehaving endpoint (cheapest: tried first), short timeouts
 *   B "Fallback B" — the usual fallback, patient timeouts (idle 3 s: no case ends at its timer)
 *   C "Spare C"    — a third endpoint (priciest), short timeouts
 *   Flip           — a hand-written node:http primary switched between down (503) and up at runtime
 *
 * Timing bounds are generous (a loaded 2-core machine); where timing is not the behaviour, orders
 * and counts are asserted instead. The scenario table is printed at the end of the file.
 */
import { countTokens } from 'gpt-tokenizer';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  countPromptTokens,
  mockCompletionText,
  startMockProvider,
  type MockProvider,
} from '../src/providers/mock-server.js';
import { completionBody, openAiUsage } from '../src/providers/mock/wire.js';
import { adapterFor } from '../src/providers/registry.js';
import { buildCatalog, type Catalog } from '../src/routing/catalog.js';
import { loadConfig } from '../src/config/load-config.js';
import { stringify } from 'yaml';
import { executeCompletion, type ExecuteDeps, type RetryPolicy } from '../src/routing/execute.js';
import { HealthRegistry } from '../src/routing/health.js';
import { planAttempts } from '../src/routing/plan.js';
import { createUpstreamAgent } from '../src/routing/upstream-client.js';
import {
  balanceUnits,
  chat,
  chatStream,
  getJson,
  startTestGateway,
  testCatalog,
  toUnits,
  waitForGeneration,
  type SseResult,
  type TestGateway,
} from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Keep answering, whatever the providers do.' }];
const PROMPT_TOKENS = countPromptTokens(MESSAGES, (text) => countTokens(text));
const FULL_TEXT = mockCompletionText(40);

// --- Test-specific budgets ---------------------------------------------------------------------
const SHORT = { connect_ms: 300, first_token_ms: 500, idle_ms: 400, response_ms: 800 };
const PATIENT = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 3000, response_ms: 5000 };
const ROUTING = {
  max_attempts: 4,
  budget_ms: 4000,
  tries_per_endpoint: 2,
  retry_backoff_ms: 20,
  max_retry_wait_ms: 500,
  breaker: { failure_threshold: 2, open_ms: 300, max_open_ms: 600 },
};
const OPEN_MS = ROUTING.breaker.open_ms;
const MAX_OPEN_MS = ROUTING.breaker.max_open_ms;
/** "At once": no timer, hint or backoff worth the name was waited for. Generous for a loaded machine. */
const FAST_MS = 1500;
const CASE_TIMEOUT_MS = 8000;

// Prices per token. A < B < C, so the default order (healthy first, then cheaper) is A, B, C.
const PRICES = {
  A: { prompt: '0.000001', completion: '0.000002' },
  B: { prompt: '0.000002', completion: '0.000004' },
  C: { prompt: '0.000003', completion: '0.000006' },
  flip: { prompt: '0.000001', completion: '0.000002' },
} as const;
const NAMES = { A: 'Primary A', B: 'Fallback B', C: 'Spare C', flip: 'Flip' } as const;
const PROVIDER_IDS = { A: 'sc-a', B: 'sc-b', C: 'sc-c', flip: 'sc-flip' } as const;

type Ep = 'A' | 'B' | 'C';
const EPS: readonly Ep[] = ['A', 'B', 'C'];

function ep(which: Ep | 'flip', upstream: string) {
  return { provider: PROVIDER_IDS[which], model: upstream, pricing: PRICES[which] };
}
function model(id: string, ...endpoints: ReturnType<typeof ep>[]) {
  return { id, name: id, context_length: 8192, endpoints };
}

const MODELS = [
  model('sc/warm-a', ep('A', 'mock-chat')),
  model('sc/warm-b', ep('B', 'mock-chat')),
  model('sc/warm-c', ep('C', 'mock-chat')),
  model('sc/429-short-hint', ep('A', 'mock@status=429,retryAfter=0.3,failFirst=1')),
  model('sc/429-long-hint', ep('A', 'mock@status=429,retryAfter=5'), ep('B', 'mock-chat')),
  model('sc/429-long-hint-single', ep('A', 'mock@status=429,retryAfter=5')),
  model('sc/429-no-hint', ep('A', 'mock@status=429'), ep('B', 'mock-chat')),
  model('sc/429-no-hint-single', ep('A', 'mock@status=429')),
  model('sc/429-all', ep('A', 'mock@status=429,retryAfter=1'), ep('C', 'mock@status=429,retryAfter=2,code=slow_down')),
  model('sc/500-once', ep('A', 'mock@failFirst=1')),
  model('sc/503-always', ep('A', 'mock@status=503'), ep('B', 'mock@status=503')),
  model('sc/503-breaker', ep('A', 'mock@status=503'), ep('B', 'mock@status=503')),
  model('sc/reset', ep('A', 'mock@behavior=reset'), ep('B', 'mock-chat')),
  model('sc/hang-stream', ep('A', 'mock@behavior=hang'), ep('B', 'mock-chat')),
  model('sc/hang-json', ep('A', 'mock@behavior=hang'), ep('B', 'mock-chat')),
  model('sc/ttft-beyond', ep('A', 'mock@ttft=1500'), ep('B', 'mock-chat')),
  model('sc/ttft-within', ep('A', 'mock@ttft=150'), ep('B', 'mock-chat')),
  model('sc/drop-stream', ep('A', 'mock@behavior=drop,breakAfter=3,tps=100'), ep('B', 'mock-chat')),
  model('sc/drop-json', ep('A', 'mock@behavior=drop'), ep('B', 'mock-chat')),
  model('sc/stall', ep('A', 'mock@behavior=stall,breakAfter=3'), ep('B', 'mock-chat')),
  model('sc/malformed-stream', ep('A', 'mock@behavior=malformed,breakAfter=2'), ep('B', 'mock-chat')),
  model('sc/malformed-json', ep('A', 'mock@behavior=malformed'), ep('B', 'mock-chat')),
  model('sc/no-done', ep('B', 'mock@behavior=no_done')),
  // A healthy second provider of the same model: it must not be tried after a context-length failure.
  model('sc/context', ep('A', 'mock@behavior=context_length'), ep('C', 'mock-chat')),
  model('sc/context-fallback', ep('B', 'mock-chat')),
  model('sc/policy', ep('A', 'mock@behavior=content_policy'), ep('B', 'mock-chat')),
  model('sc/policy-fallback', ep('C', 'mock-chat')),
  model('sc/all-timeout', ep('A', 'mock@behavior=hang'), ep('C', 'mock@behavior=hang')),
  model('sc/reset-stream', ep('A', 'mock@behavior=reset'), ep('B', 'mock-chat')),
  model('sc/accounting', ep('A', 'mock@status=503'), ep('C', 'mock@behavior=reset')),
  model('sc/accounting-fallback', ep('B', 'mock-chat')),
  model('sc/flip', ep('flip', 'flip-chat'), ep('B', 'mock-chat')),
  // Unit-level loop tests (fake clock): only the catalog entries are used.
  model('sc/unit-budget', ep('A', 'mock@status=429,retryAfter=1.5,failFirst=1')),
  model('sc/unit-hint', ep('A', 'mock@status=429,retryAfter=0.5,failFirst=1')),
  model('sc/unit-order', ep('A', 'mock@status=503'), ep('B', 'mock-chat')),
];

// --- A primary whose health the test switches at runtime -----------------------------------------
interface FlipServer {
  url: string;
  mode: 'down' | 'up';
  hits: number;
  close(): Promise<void>;
}

async function startFlipServer(): Promise<FlipServer> {
  const state = { mode: 'down' as 'down' | 'up', hits: 0 };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    state.hits++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string };
      const text =
        state.mode === 'down'
          ? JSON.stringify({
              error: {
                message: 'The server is overloaded or not ready yet.',
                type: 'server_error',
                param: null,
                code: null,
              },
            })
          : JSON.stringify(
              completionBody(
                { id: `chatcmpl-flip${state.hits}`, created: Math.floor(Date.now() / 1000), model: body.model },
                'Served by the primary.',
                'stop',
                openAiUsage(PROMPT_TOKENS, 5),
              ),
            );
      res.writeHead(state.mode === 'down' ? 503 : 200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get mode() {
      return state.mode;
    },
    set mode(mode) {
      state.mode = mode;
    },
    get hits() {
      return state.hits;
    },
    set hits(value) {
      state.hits = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// --- The scenario table ---------------------------------------------------------------------------
interface Outcome {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Non-streamed body, or the JSON error body of a stream that failed before its first byte. */
  json: any;
  sse: SseResult | null;
  ms: number;
  attempts: Record<Ep, number>;
}

interface Scenario {
  name: string;
  model: string;
  models?: string[];
  stream: boolean;
  status: number;
  /** Provider name that served (200 only). */
  servedBy?: string;
  /** Attempts per endpoint; endpoints not named must see none. */
  attempts: Partial<Record<Ep, number>>;
  /** Elapsed time bounds in ms, as the caller measured it. */
  ms: readonly [number, number];
  /** Statuses of GET /generation's provider_responses, in order (served requests only). */
  statuses?: (number | null)[];
  check?: (o: Outcome) => void;
}

/** The stream's text, and its finish reasons, over every chunk. */
function streamText(sse: SseResult): string {
  return sse.events.map((e) => (e.choices?.[0]?.delta?.content as string | undefined) ?? '').join('');
}
function finishReasons(sse: SseResult): string[] {
  return sse.events
    .flatMap((e) => (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason))
    .filter((r): r is string => r !== null);
}

/** A stream that ended with exactly one in-band error chunk of `errorType`, never as a success. */
function expectInBandError(o: Outcome, errorType: string) {
  const sse = o.sse!;
  expect(o.status).toBe(200);
  expect(streamText(sse).length, 'content reached the caller before the failure').toBeGreaterThan(0);
  expect(streamText(sse)).not.toBe(FULL_TEXT);
  expect(finishReasons(sse)).toEqual(['error']);
  const errors = sse.events.filter((e) => e.error !== undefined);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toBe(sse.events.at(-1));
  expect(errors[0].error.metadata.error_type).toBe(errorType);
  expect(
    sse.events.some((e) => Array.isArray(e.choices) && e.choices.length === 0 && e.usage),
    'no usage chunk after an error',
  ).toBe(false);
  expect(sse.done).toBe(true);
}

/** A clean, complete stream: every chunk from `provider`, the full text, one stop, usage, [DONE]. */
function expectCleanStream(o: Outcome, provider: string) {
  const sse = o.sse!;
  expect(o.status, sse.raw).toBe(200);
  expect(sse.events.every((e) => e.provider === provider && e.error === undefined)).toBe(true);
  expect(streamText(sse)).toBe(FULL_TEXT);
  expect(finishReasons(sse)).toEqual(['stop']);
  expect(sse.events.at(-1).usage.completion_tokens).toBe(40);
  expect(sse.done).toBe(true);
}

const SCENARIOS: Scenario[] = [
  {
    name: '429 + short Retry-After (0.3 s ≤ max wait), failFirst=1: the same endpoint again after the hint',
    model: 'sc/429-short-hint',
    stream: false,
    status: 200,
    servedBy: NAMES.A,
    attempts: { A: 2 },
    ms: [280, 2000],
    statuses: [429, 200],
  },
  {
    name: '429 + long Retry-After (5 s > max wait): the next endpoint at once',
    model: 'sc/429-long-hint',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [429, 200],
  },
  {
    name: '429 + long Retry-After, single endpoint: 429 with Retry-After to the caller',
    model: 'sc/429-long-hint-single',
    stream: false,
    status: 429,
    attempts: { A: 1 },
    ms: [0, FAST_MS],
    check: (o) => {
      expect(o.headers['retry-after']).toBe('5');
      expect(o.json.error.metadata).toMatchObject({
        error_type: 'rate_limit_exceeded',
        provider_code: 'rate_limit_exceeded',
        provider_name: NAMES.A,
      });
    },
  },
  {
    name: '429 without Retry-After: the next endpoint',
    model: 'sc/429-no-hint',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [429, 200],
  },
  {
    name: '429 without Retry-After, single endpoint: retried once after a backoff, then 429 without Retry-After',
    model: 'sc/429-no-hint-single',
    stream: false,
    status: 429,
    attempts: { A: 2 },
    ms: [0, FAST_MS],
    check: (o) => {
      expect(o.headers['retry-after']).toBeUndefined();
      expect(o.json.error.metadata.provider_code).toBe('rate_limit_exceeded');
    },
  },
  {
    name: 'all rate-limited (hints 1 s and 2 s > max wait): 429 with Retry-After 1, nothing waited for',
    model: 'sc/429-all',
    stream: false,
    status: 429,
    attempts: { A: 1, C: 1 },
    ms: [0, FAST_MS],
    check: (o) => {
      expect(o.headers['retry-after']).toBe('1');
      expect(o.json.error.metadata).toMatchObject({ error_type: 'rate_limit_exceeded', provider_code: 'slow_down' });
    },
  },
  {
    name: '500 once, then healthy (single endpoint): 200 after 2 attempts',
    model: 'sc/500-once',
    stream: false,
    status: 200,
    servedBy: NAMES.A,
    attempts: { A: 2 },
    ms: [0, FAST_MS],
    statuses: [500, 200],
  },
  {
    name: 'persistent 503 on both endpoints: 502 with metadata after tries_per_endpoint attempts each',
    model: 'sc/503-always',
    stream: false,
    status: 502,
    attempts: { A: 2, B: 2 },
    ms: [0, FAST_MS],
    check: (o) => {
      expect(o.json.error.code).toBe(502);
      expect(o.json.error.metadata).toMatchObject({ error_type: 'server', raw: null }); // 5xx bodies are not relayed
      expect([NAMES.A, NAMES.B]).toContain(o.json.error.metadata.provider_name); // the last attempt's: jitter decides which
    },
  },
  {
    name: 'TCP reset before headers: the next endpoint',
    model: 'sc/reset',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [null, 200],
  },
  {
    name: 'no response at all, streamed: header timeout (300 ms), then the next endpoint',
    model: 'sc/hang-stream',
    stream: true,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [280, 1500],
    statuses: [null, 200],
    check: (o) => expectCleanStream(o, NAMES.B),
  },
  {
    name: 'no response at all, non-streamed: served from an upstream stream, so the header budget (300 ms) applies, then the next endpoint',
    model: 'sc/hang-json',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [280, 2500],
    statuses: [null, 200],
  },
  {
    name: 'slow first token beyond first_token_ms (1.5 s > 500 ms): the next endpoint',
    model: 'sc/ttft-beyond',
    stream: true,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [480, 1800],
    statuses: [null, 200],
    check: (o) => expectCleanStream(o, NAMES.B),
  },
  {
    name: 'slow first token within first_token_ms (150 ms < 500 ms): served',
    model: 'sc/ttft-within',
    stream: true,
    status: 200,
    servedBy: NAMES.A,
    attempts: { A: 1 },
    ms: [140, 1500],
    statuses: [200],
    check: (o) => expectCleanStream(o, NAMES.A),
  },
  {
    name: 'stream cut mid-answer: in-band error, finish_reason error, never stop, no failover',
    model: 'sc/drop-stream',
    stream: true,
    status: 200,
    attempts: { A: 1 },
    ms: [0, FAST_MS],
    check: (o) => expectInBandError(o, 'provider_unavailable'),
  },
  {
    name: 'non-streamed body cut mid-answer: nothing reached the caller, so the next endpoint',
    model: 'sc/drop-json',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [null, 200],
  },
  {
    name: 'stream stall after content: in-band timeout error after idle_ms (400 ms)',
    model: 'sc/stall',
    stream: true,
    status: 200,
    attempts: { A: 1 },
    ms: [380, 1800],
    check: (o) => expectInBandError(o, 'timeout'),
  },
  {
    name: 'malformed chunk mid-stream: in-band error (what it carried is not skipped), no failover',
    model: 'sc/malformed-stream',
    stream: true,
    status: 200,
    attempts: { A: 1 },
    ms: [0, FAST_MS],
    check: (o) => expectInBandError(o, 'invalid_response'),
  },
  {
    name: 'malformed chunk, non-streamed caller: nothing reached the caller, so the next endpoint',
    model: 'sc/malformed-json',
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [null, 200],
  },
  {
    name: 'no [DONE]: finalised with usage at once, not at the idle timer (3 s)',
    model: 'sc/no-done',
    stream: true,
    status: 200,
    servedBy: NAMES.B,
    attempts: { B: 1 },
    ms: [0, 1000],
    statuses: [200],
    check: (o) => expectCleanStream(o, NAMES.B),
  },
  {
    name: 'context length exceeded: the next model of `models`, never the same model again',
    model: 'sc/context',
    models: ['sc/context', 'sc/context-fallback'],
    stream: false,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [400, 200],
    check: (o) => expect(o.json.model).toBe('sc/context-fallback'),
  },
  {
    name: "context length exceeded without a fallback model: 400, the same model's healthy endpoint untried",
    model: 'sc/context',
    stream: false,
    status: 400,
    attempts: { A: 1 },
    ms: [0, FAST_MS],
    check: (o) =>
      expect(o.json.error.metadata).toMatchObject({
        error_type: 'context_length_exceeded',
        provider_code: 'context_length_exceeded',
        provider_name: NAMES.A,
      }),
  },
  {
    name: "content-policy rejection: returned with the provider's reason, no failover (endpoint or model)",
    model: 'sc/policy',
    models: ['sc/policy', 'sc/policy-fallback'],
    stream: false,
    status: 400,
    attempts: { A: 1 },
    ms: [0, FAST_MS],
    check: (o) => {
      expect(o.json.error.message).toContain('safety system');
      expect(o.json.error.metadata).toMatchObject({
        error_type: 'content_policy',
        provider_code: 'content_policy_violation',
        provider_name: NAMES.A,
      });
    },
  },
  {
    name: 'every attempt timed out (both endpoints silent): 408',
    model: 'sc/all-timeout',
    stream: true,
    status: 408,
    attempts: { A: 2, C: 2 },
    ms: [4 * 280, 3500],
    check: (o) => {
      expect(o.json.error.code).toBe(408);
      expect(o.json.error.metadata.error_type).toBe('timeout');
    },
  },
  {
    name: 'streaming failover before the first byte (reset, then served): a clean 200 stream',
    model: 'sc/reset-stream',
    stream: true,
    status: 200,
    servedBy: NAMES.B,
    attempts: { A: 1, B: 1 },
    ms: [0, FAST_MS],
    statuses: [null, 200],
    check: (o) => {
      expectCleanStream(o, NAMES.B);
      expect(o.headers['content-type']).toContain('text/event-stream');
    },
  },
];

interface Row {
  scenario: string;
  got: string;
  attempts: string;
  ms: number;
}

describe('failover scenarios', () => {
  let gw: TestGateway;
  let key: string;
  let accountId: string;
  const mocks = {} as Record<Ep, MockProvider>;
  let flip: FlipServer;
  const rows: Row[] = [];

  beforeAll(async () => {
    for (const e of EPS) mocks[e] = await startMockProvider();
    flip = await startFlipServer();
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: MODELS,
      configure: (file) => {
        const provider = (id: string, name: string, url: string, timeouts: typeof SHORT) => ({
          id,
          name,
          kind: 'openai',
          base_url: url,
          api_key: 'upstream-secret',
          timeouts,
        });
        file.providers.push(
          provider(PROVIDER_IDS.A, NAMES.A, mocks.A.url, SHORT),
          provider(PROVIDER_IDS.B, NAMES.B, mocks.B.url, PATIENT),
          provider(PROVIDER_IDS.C, NAMES.C, mocks.C.url, SHORT),
          provider(PROVIDER_IDS.flip, NAMES.flip, flip.url, SHORT),
        );
        (file as { routing: unknown }).routing = ROUTING;
        // No keep-alive comment goes out before a failure arrives: statuses stay real HTTP statuses.
        file.server.keep_alive_interval_ms = 60_000;
      },
    });
    accountId = await gw.createAccount(100);
    key = (await gw.createKey(accountId)).key;
    // Warm every path (connections, JIT) so the first measured case is not the slowest.
    for (const m of ['sc/warm-a', 'sc/warm-b', 'sc/warm-c']) {
      expect((await chat(gw, key, { model: m, messages: MESSAGES })).status).toBe(200);
      expect((await chatStream(gw, key, { model: m, messages: MESSAGES })).status).toBe(200);
    }
  }, 20_000);

  afterAll(async () => {
    if (rows.length > 0) {
      const lines = rows.map((r) => `| ${r.scenario} | ${r.got} | ${r.attempts} | ${r.ms} ms |`);
      console.log(
        ['| scenario | caller got | attempts per endpoint | time |', '|---|---|---|---|', ...lines].join('\n'),
      );
    }
    await gw?.close();
    await Promise.all([...Object.values(mocks).map((m) => m.close()), flip?.close()]);
  }, 10_000);

  beforeEach(() => {
    for (const e of EPS) mocks[e].reset();
    flip.hits = 0;
  });

  function counts(): Record<Ep, number> {
    return { A: mocks.A.stats.requests, B: mocks.B.stats.requests, C: mocks.C.stats.requests };
  }
  function describeCounts(c: Partial<Record<Ep | 'Flip', number>>): string {
    return Object.entries(c)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
  }

  async function send(body: Record<string, unknown>, stream: boolean): Promise<Outcome> {
    const started = performance.now();
    let status: number;
    let headers: Outcome['headers'];
    let json: any = null;
    let sse: SseResult | null = null;
    if (stream) {
      sse = await chatStream(gw, key, body);
      status = sse.status;
      headers = sse.headers;
      if (sse.raw.startsWith('{')) json = JSON.parse(sse.raw);
    } else {
      const r = await chat(gw, key, body);
      status = r.status;
      headers = r.headers;
      json = r.json;
    }
    return { status, headers, json, sse, ms: Math.round(performance.now() - started), attempts: counts() };
  }

  function summary(o: Outcome): string {
    const sse = o.sse;
    if (o.status !== 200) {
      const retry = o.headers['retry-after'];
      return `${o.status} ${String(o.json?.error?.metadata?.error_type ?? '')}${retry === undefined ? '' : `, Retry-After ${String(retry)}`}`;
    }
    if (sse) {
      const error = sse.events.find((e) => e.error !== undefined);
      const provider = String(sse.events[0]?.provider ?? '');
      return error
        ? `200 stream from ${provider}, in-band error (${String(error.error.metadata.error_type)}), finish_reason error`
        : `200 stream from ${provider}, complete`;
    }
    return `200 from ${String(o.json.provider)}`;
  }

  it.each(SCENARIOS)(
    '$name',
    async (s) => {
      const o = await send({ model: s.model, ...(s.models ? { models: s.models } : {}), messages: MESSAGES }, s.stream);
      rows.push({ scenario: s.name, got: summary(o), attempts: describeCounts(o.attempts), ms: o.ms });

      expect(o.status, o.sse?.raw ?? JSON.stringify(o.json)).toBe(s.status);
      expect(o.attempts).toEqual({ A: s.attempts.A ?? 0, B: s.attempts.B ?? 0, C: s.attempts.C ?? 0 });
      expect(o.ms).toBeGreaterThanOrEqual(s.ms[0]);
      expect(o.ms).toBeLessThanOrEqual(s.ms[1]);
      if (s.servedBy !== undefined) {
        if (o.sse) expect(o.sse.events.every((e) => e.provider === s.servedBy)).toBe(true);
        else {
          expect(o.json.provider).toBe(s.servedBy);
          expect(o.json.choices[0].message.content).toBe(FULL_TEXT);
          expect(o.json.choices[0].finish_reason).toBe('stop');
        }
      }
      if (o.status !== 200) expect(o.json.error.code).toBe(o.status);
      if (s.statuses) {
        const id = String(o.headers['x-generation-id']);
        const g = await waitForGeneration(gw, id, key);
        expect(g.status).toBe(200);
        expect(g.json.data.provider_responses.map((a: { status: number | null }) => a.status)).toEqual(s.statuses);
        expect(g.json.data.provider_name).toBe(s.servedBy);
      }
      s.check?.(o);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'fail-over accounting: served model and provider named, every attempt listed, only the serving attempt billed at its prices',
    async () => {
      const before = await balanceUnits(gw, accountId);
      const o = await send(
        { model: 'sc/accounting', models: ['sc/accounting', 'sc/accounting-fallback'], messages: MESSAGES },
        false,
      );
      rows.push({
        scenario: 'fail-over accounting (503, reset, 503 again, then the fallback model)',
        got: summary(o),
        attempts: describeCounts(o.attempts),
        ms: o.ms,
      });
      expect(o.status, JSON.stringify(o.json)).toBe(200);
      // max_attempts 4: the requested model gets one retry (at whichever endpoint's backoff ends first);
      // the last attempt is kept for the fallback model.
      expect(o.attempts.A + o.attempts.C).toBe(3);
      expect(o.attempts.B).toBe(1);
      expect(o.json.model).toBe('sc/accounting-fallback');
      expect(o.json.provider).toBe(NAMES.B);
      // Fallback B's prices: 0.000002 prompt, 0.000004 completion per token; nothing for the failed attempts.
      const expected = PROMPT_TOKENS * 2000 + 40 * 4000;
      expect(toUnits(o.json.usage.cost)).toBe(expected);

      const g = await getJson(gw, `/generation?id=${o.json.id}`, key);
      expect(g.status).toBe(200);
      expect(g.json.data.model).toBe('sc/accounting-fallback');
      expect(g.json.data.provider_name).toBe(NAMES.B);
      const responses = g.json.data.provider_responses as {
        provider_name: string;
        status: number | null;
        latency: number;
      }[];
      const statuses = responses.map((r) => [r.provider_name, r.status]);
      expect(statuses.slice(0, 2)).toEqual([
        [NAMES.A, 503],
        [NAMES.C, null],
      ]);
      expect([
        [NAMES.A, 503],
        [NAMES.C, null],
      ]).toContainEqual(statuses[2]);
      expect(statuses[3]).toEqual([NAMES.B, 200]);
      for (const r of responses) {
        expect(typeof r.latency).toBe('number');
        expect(r.latency).toBeGreaterThanOrEqual(0);
        expect(r.latency).toBeLessThanOrEqual(o.ms);
      }
      expect(toUnits(g.json.data.total_cost)).toBe(expected);
      expect(g.json.data.tokens_completion).toBe(40);
      expect(await balanceUnits(gw, accountId)).toBe(before - expected);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'circuit breaker: a persistently failing model is not hammered — open breakers answer 502 at once, then one probe per endpoint',
    async () => {
      const model = 'sc/503-breaker';
      const first = await send({ model, messages: MESSAGES }, false);
      expect(first.status).toBe(502);
      expect(first.attempts).toEqual({ A: 2, B: 2, C: 0 }); // threshold 2: both breakers are open now
      rows.push({
        scenario: 'breaker 1: persistent 503',
        got: summary(first),
        attempts: describeCounts(first.attempts),
        ms: first.ms,
      });

      const second = await send({ model, messages: MESSAGES }, false);
      rows.push({
        scenario: 'breaker 2: at once, every endpoint open',
        got: summary(second),
        attempts: describeCounts(second.attempts),
        ms: second.ms,
      });
      expect(second.status).toBe(502);
      expect(second.attempts).toEqual(first.attempts); // nothing sent upstream
      expect(second.headers['retry-after']).toBe('1');
      // Nothing was called: no provider is named as the one that failed (outside check).
      expect(second.json.error.metadata).toMatchObject({ error_type: 'provider_unavailable', provider_name: null });
      expect(second.json.error.message).toContain('temporarily unavailable');

      await sleep(OPEN_MS + 150);
      const third = await send({ model, messages: MESSAGES }, false);
      rows.push({
        scenario: 'breaker 3: after open_ms, one probe each',
        got: summary(third),
        attempts: describeCounts({ A: third.attempts.A - first.attempts.A, B: third.attempts.B - first.attempts.B }),
        ms: third.ms,
      });
      expect(third.status).toBe(502);
      expect(third.json.error.metadata.error_type).toBe('server');
      // One probe per endpoint: a failed probe re-opens the breaker (for twice as long), so no retries.
      expect(third.attempts).toEqual({ A: 3, B: 3, C: 0 });
    },
    CASE_TIMEOUT_MS,
  );

  it('a primary down for a while, then healthy: fallback serves throughout, the primary sees only probes, and traffic is back on it within max_open_ms + slack', async () => {
    flip.mode = 'down';
    const callers = 20;
    const interval = 100;
    const outage: { status: number; provider: string }[] = [];
    const outageStart = performance.now();
    for (let k = 0; k < callers; k++) {
      const r = await chat(gw, key, { model: 'sc/flip', messages: MESSAGES });
      outage.push({ status: r.status, provider: String(r.json?.provider) });
      // Paced on a fixed schedule: a slow request does not thin out the callers.
      const next = outageStart + (k + 1) * interval;
      await sleep(Math.max(0, next - performance.now()));
    }
    const outageElapsed = performance.now() - outageStart;
    const primaryHitsDuringOutage = flip.hits;
    expect(
      outage.every((r) => r.status === 200 && r.provider === NAMES.B),
      JSON.stringify(outage),
    ).toBe(true);
    expect(mocks.B.stats.requests).toBe(outage.length);
    // Without a breaker the primary would see every request; with it: the threshold, then at most
    // one probe per open period (which doubles up to max_open_ms on failed probes).
    expect(primaryHitsDuringOutage).toBeLessThanOrEqual(
      ROUTING.breaker.failure_threshold + 1 + Math.ceil(outageElapsed / OPEN_MS),
    );
    expect(primaryHitsDuringOutage).toBeLessThanOrEqual(callers / 2);
    rows.push({
      scenario: `primary down ${Math.round(outageElapsed)} ms, a request every ${interval} ms`,
      got: `${outage.length}× 200 from ${NAMES.B}`,
      attempts: describeCounts({ Flip: primaryHitsDuringOutage, B: mocks.B.stats.requests }),
      ms: Math.round(outageElapsed),
    });

    flip.mode = 'up';
    const recoveredAt = performance.now();
    let backAfter: number | null = null;
    let sent = 0;
    while (performance.now() - recoveredAt < 4000) {
      const r = await chat(gw, key, { model: 'sc/flip', messages: MESSAGES });
      sent++;
      expect(r.status).toBe(200);
      if (r.json.provider === NAMES.flip) {
        backAfter = performance.now() - recoveredAt;
        break;
      }
      await sleep(interval);
    }
    rows.push({
      scenario: 'primary healthy again: first request served by it',
      got: `200 from ${NAMES.flip} after ${sent} requests`,
      attempts: describeCounts({ Flip: flip.hits - primaryHitsDuringOutage }),
      ms: Math.round(backAfter ?? -1),
    });
    expect(backAfter, 'traffic never came back to the recovered primary').not.toBeNull();
    expect(backAfter!).toBeLessThanOrEqual(MAX_OPEN_MS + interval + 800);

    // Closed again: every following request goes to the primary, and only to it.
    const hitsBefore = flip.hits;
    const fallbackBefore = mocks.B.stats.requests;
    for (let i = 0; i < 5; i++) {
      const r = await chat(gw, key, { model: 'sc/flip', messages: MESSAGES });
      expect(r.status).toBe(200);
      expect(r.json.provider).toBe(NAMES.flip);
    }
    expect(flip.hits - hitsBefore).toBe(5);
    expect(mocks.B.stats.requests).toBe(fallbackBefore);
  }, 12_000);
});

describe('execute loop (unit, fake clock)', () => {
  let mocks: Record<'A' | 'B', MockProvider>;
  let catalog: Catalog;
  const agent = createUpstreamAgent();

  beforeAll(async () => {
    mocks = { A: await startMockProvider(), B: await startMockProvider() };
    const file = testCatalog(mocks.B.url, MODELS);
    file.providers.push(
      { id: PROVIDER_IDS.A, name: NAMES.A, kind: 'openai', base_url: mocks.A.url, api_key: 'k', timeouts: SHORT },
      { id: PROVIDER_IDS.B, name: NAMES.B, kind: 'openai', base_url: mocks.B.url, api_key: 'k', timeouts: PATIENT },
      { id: PROVIDER_IDS.C, name: NAMES.C, kind: 'openai', base_url: mocks.B.url, api_key: 'k', timeouts: SHORT },
      { id: PROVIDER_IDS.flip, name: NAMES.flip, kind: 'openai', base_url: mocks.B.url, api_key: 'k', timeouts: SHORT },
    );
    catalog = buildCatalog(loadConfig({ TOLLGATE_CONFIG: 'test.yaml', PORT: '0' }, () => stringify(file)));
  }, 20_000);
  afterAll(async () => {
    await agent.close();
    await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
  }, 10_000);
  beforeEach(() => {
    mocks.A.reset();
    mocks.B.reset();
  });

  /** `tick`: how far the clock moves at every reading (0: only sleeps move it). */
  function run(
    modelId: string,
    policy: Partial<RetryPolicy>,
    { random = Math.random, tick = 0 }: { random?: () => number; tick?: number } = {},
  ) {
    let clock = 1_000_000;
    const sleeps: number[] = [];
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 1000, maxOpenMs: 2000, probeTimeoutMs: 60_000 });
    const deps: ExecuteDeps = {
      dispatcherFor: () => agent,
      adapterFor,
      now: () => (clock += tick),
      health,
      policy: {
        maxAttempts: 4,
        budgetMs: 10_000,
        triesPerEndpoint: 2,
        retryBackoffMs: 20,
        maxRetryWaitMs: 5000,
        ...policy,
      },
      sleep: (ms) => {
        sleeps.push(ms);
        clock += ms;
        return Promise.resolve();
      },
      random,
    };
    const plan = planAttempts(
      catalog,
      { model: modelId },
      { allowedModels: null, allowedProviders: null },
      health,
      clock,
    );
    const signal = new AbortController().signal;
    return { sleeps, outcome: executeCompletion(deps, { plan, body: { model: modelId, messages: MESSAGES }, signal }) };
  }

  it(
    'does not wait for a Retry-After that fits max_retry_wait_ms but not the time budget',
    async () => {
      const { sleeps, outcome } = run('sc/unit-budget', { budgetMs: 1000 });
      const result = await outcome;
      expect(result.ok).toBe(false);
      expect(sleeps).toEqual([]);
      expect(result.attempts.map((a) => a.status)).toEqual([429]);
      expect(mocks.A.stats.requests).toBe(1);
      if (!result.ok) expect(result.error.code).toBe('upstream.rate_limited');
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'waits exactly the Retry-After when it fits both, then retries the same endpoint',
    async () => {
      const { sleeps, outcome } = run('sc/unit-hint', { budgetMs: 1000 });
      const result = await outcome;
      expect(result.ok).toBe(true);
      expect(sleeps).toEqual([500]);
      expect(result.attempts.map((a) => a.status)).toEqual([429, 200]);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'tries every endpoint once before retrying a failed one, even when the jittered backoff is 0',
    async () => {
      const { outcome } = run('sc/unit-order', {}, { random: () => 0 });
      const result = await outcome;
      expect(result.ok).toBe(true);
      expect(result.attempts.map((a) => [a.providerName, a.status])).toEqual([
        [NAMES.A, 503],
        [NAMES.B, 200],
      ]);
      expect(mocks.A.stats.requests).toBe(1);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'starts no new attempt once the time budget is spent, even with an untried endpoint left',
    async () => {
      // Every reading of the clock is 1 s later: the first attempt ends past the 2.5 s budget.
      const { sleeps, outcome } = run('sc/unit-order', { budgetMs: 2500 }, { tick: 1000 });
      const result = await outcome;
      expect(result.ok).toBe(false);
      expect(sleeps).toEqual([]);
      expect(result.attempts.map((a) => a.status)).toEqual([503]);
      expect(mocks.B.stats.requests).toBe(0);
    },
    CASE_TIMEOUT_MS,
  );

  it('plans a half-open endpoint first (its probe is free) and behind the others while its probe is out', () => {
    const health = new HealthRegistry({ failureThreshold: 2, openMs: 300, maxOpenMs: 600, probeTimeoutMs: 60_000 });
    const order = (now: number) =>
      planAttempts(catalog, { model: 'sc/flip' }, { allowedModels: null, allowedProviders: null }, health, now).map(
        (p) => p.endpoint.provider.id,
      );
    const primary = HealthRegistry.keyOf('sc/flip', PROVIDER_IDS.flip);
    expect(order(0)).toEqual([PROVIDER_IDS.flip, PROVIDER_IDS.B]);
    health.recordFailure(primary, 0, 'server', null);
    health.recordFailure(primary, 0, 'server', null);
    expect(order(100)).toEqual([PROVIDER_IDS.B, PROVIDER_IDS.flip]); // open: skipped, last
    expect(order(300)).toEqual([PROVIDER_IDS.flip, PROVIDER_IDS.B]); // half-open: some request must probe it
    expect(health.tryAcquire(primary, 300)).toBe(true);
    expect(order(301)).toEqual([PROVIDER_IDS.B, PROVIDER_IDS.flip]); // the probe is out
    health.recordSuccess(primary, 320, 20, null);
    expect(order(321)).toEqual([PROVIDER_IDS.flip, PROVIDER_IDS.B]);
  });
});
