/**
 * `providers[].http2`: the gateway in front of the simulated provider speaking h2c. Answers, usage
 * and charges are what HTTP/1.1 gives; concurrent streams share one upstream connection; a provider
 * configured for HTTP/2 that only speaks HTTP/1.1 is a connection failure the request fails over from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config/load-config.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { chat, chatStream, getJson, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Say something over HTTP/2.' }];
const PRICE = { prompt: '0.000001', completion: '0.000002' };
const TIMEOUTS = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 2000, response_ms: 5000 };

describe('HTTP/2 upstreams through the gateway', () => {
  let h2: MockProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    h2 = await startMockProvider({ http2: true });
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push(
          { id: 'h2', name: 'H2', kind: 'openai', base_url: h2.url, api_key: 'k', http2: true, timeouts: TIMEOUTS },
          {
            id: 'h2-plain',
            name: 'H2 plain',
            kind: 'openai',
            base_url: h2.url,
            api_key: 'k',
            http2: true,
            stream_upstream: false,
            timeouts: TIMEOUTS,
          },
          // The HTTP/1.1 simulator, configured as if it spoke HTTP/2.
          {
            id: 'h1-as-h2',
            name: 'H1 as H2',
            kind: 'openai',
            base_url: file.providers[0]!.base_url,
            api_key: 'k',
            http2: true,
            timeouts: TIMEOUTS,
          },
        );
        const model = (id: string, endpoints: { provider: string; model: string }[]) => ({
          id,
          name: id,
          context_length: 8192,
          endpoints: endpoints.map((endpoint) => ({ ...endpoint, pricing: PRICE })),
        });
        (file.models as unknown[]).push(
          model('h2/chat', [{ provider: 'h2', model: 'mock@tps=400,tokens=12' }]),
          model('h2/plain', [{ provider: 'h2-plain', model: 'mock@tokens=12' }]),
          model('h2/reset', [
            { provider: 'h2', model: 'mock@behavior=reset' },
            { provider: 'h2-plain', model: 'mock@tokens=12' },
          ]),
          model('h2/failover', [
            { provider: 'h1-as-h2', model: 'mock@tokens=12' },
            { provider: 'h2', model: 'mock@tokens=12' },
          ]),
        );
      },
    });
    const account = await gw.createAccount(10);
    key = (await gw.createKey(account)).key;
  }, 30_000);
  afterAll(async () => {
    await gw?.close();
    await h2?.close();
  });

  /** One answer from `model`, streamed or not; must be a 200. Its generation id. */
  async function answeredId(model: string, stream: boolean): Promise<string> {
    if (stream) {
      const s = await chatStream(gw, key, { model, messages: MESSAGES });
      expect(s.status).toBe(200);
      return s.events[0].id as string;
    }
    const r = await chat(gw, key, { model, messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    return r.json.id as string;
  }

  /** `GET /generation`'s provider_responses as [provider name, status] pairs. */
  async function providerResponses(id: string): Promise<[string, number | null][]> {
    const generation = await getJson(gw, `/generation?id=${id}`, key);
    expect(generation.status).toBe(200);
    return (generation.json.data.provider_responses as { provider_name: string; status: number | null }[]).map((p) => [
      p.provider_name,
      p.status,
    ]);
  }

  it('answers non-streamed requests (from an upstream stream and from plain JSON) and charges their usage', async () => {
    for (const model of ['h2/chat', 'h2/plain']) {
      const r = await chat(gw, key, { model, messages: MESSAGES });
      expect(r.status, r.text).toBe(200);
      expect(r.json.usage.completion_tokens).toBe(12);
      const generation = await getJson(gw, `/generation?id=${r.json.id}`, key);
      expect(generation.status).toBe(200);
      const { prompt_tokens, completion_tokens } = r.json.usage as { prompt_tokens: number; completion_tokens: number };
      expect(toUnits(generation.json.data.total_cost)).toBe(prompt_tokens * 1000 + completion_tokens * 2000);
    }
  });

  it('relays concurrent streams whole, all on one upstream connection', async () => {
    await chat(gw, key, { model: 'h2/chat', messages: MESSAGES }); // the connection is up
    h2.reset();
    const streams = await Promise.all(
      Array.from({ length: 40 }, () => chatStream(gw, key, { model: 'h2/chat', messages: MESSAGES })),
    );
    for (const s of streams) {
      expect(s.status).toBe(200);
      expect(s.done).toBe(true);
      expect(s.events.at(-1).usage.completion_tokens).toBe(12);
      expect(s.events.filter((e) => e.error !== undefined)).toEqual([]);
    }
    expect(h2.stats.requests).toBe(40);
    expect(h2.stats.connections).toBe(0);
  });

  it('fails over from a stream the provider resets before answering, at once (no wait for a timeout)', async () => {
    for (const stream of [false, true]) {
      const started = Date.now();
      const id = await answeredId('h2/reset', stream);
      expect(Date.now() - started).toBeLessThan(TIMEOUTS.connect_ms);
      expect(await providerResponses(id)).toEqual([
        ['H2', null],
        ['H2 plain', 200],
      ]);
    }
  });

  it('fails over from a provider that does not speak HTTP/2 (a connection failure, nothing sent)', async () => {
    for (const stream of [false, true]) {
      expect(await providerResponses(await answeredId('h2/failover', stream))).toEqual([
        ['H1 as H2', null],
        ['H2', 200],
      ]);
    }
  });
});

describe('providers[].http2 in the config', () => {
  const load = (provider: Record<string, unknown>) =>
    loadConfig({ TOLLGATE_CONFIG: 'x.yaml' }, () =>
      stringify({
        providers: [provider],
        models: [
          {
            id: 'm/x',
            name: 'x',
            context_length: 8192,
            endpoints: [{ provider: provider.id, model: 'x', pricing: { prompt: '0', completion: '0' } }],
          },
        ],
      }),
    );

  it('is off unless set, and refused on the built-in demo provider (an HTTP/1.1 server)', () => {
    const local = { id: 'local', name: 'Local', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' };
    expect(load(local).providers[0]!.http2).toBe(false);
    expect(load({ ...local, http2: true }).providers[0]!.http2).toBe(true);
    expect(() => load({ id: 'demo', name: 'Demo', kind: 'demo', http2: true })).toThrow(
      /providers\.0\.http2: http2: the built-in demo provider speaks HTTP\/1\.1 only/,
    );
  });
});
