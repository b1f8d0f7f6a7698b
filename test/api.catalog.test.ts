/** docs/api.md catalog: GET /models, GET /models/{author}/{slug}/endpoints, GET /providers (store-independent). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectFields, expectNoLeak } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MODEL_FIELDS = {
  id: 'string',
  canonical_slug: 'string',
  name: 'string',
  created: 'int',
  description: 'string',
  context_length: 'int|null',
  architecture: 'object',
  pricing: 'object',
  top_provider: 'object',
  per_request_limits: 'object|null',
  supported_parameters: 'array',
  default_parameters: 'object|null',
  supported_voices: 'array|null',
  links: 'object',
} as const;

const ENDPOINT_FIELDS = {
  name: 'string',
  model_id: 'string',
  model_name: 'string',
  provider_name: 'string',
  tag: 'string',
  context_length: 'int',
  max_completion_tokens: 'int|null',
  max_prompt_tokens: 'int|null',
  pricing: 'object',
  quantization: 'string|null',
  supported_parameters: 'array',
  supports_implicit_caching: 'boolean',
  supports_tool_choice: 'object',
  rate_limits: 'object',
  uptime_last_5m: 'number|null',
  uptime_last_30m: 'number|null',
  uptime_last_1d: 'number|null',
  latency_last_30m: 'object|null',
  throughput_last_30m: 'object|null',
} as const;

const DECIMAL = /^\d+(\.\d+)?$/;

function expectPricing(pricing: Record<string, unknown>): void {
  expectFields(pricing, { prompt: 'string', completion: 'string' });
  for (const [field, value] of Object.entries(pricing)) {
    expect(typeof value, `pricing.${field}`).toBe('string');
    expect(value).toMatch(DECIMAL);
  }
}

function expectPercentiles(value: unknown): void {
  if (value === null) return;
  expectFields(value as Record<string, unknown>, { p50: 'number', p75: 'number', p90: 'number', p99: 'number' });
}

describe('catalog', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  it('GET /models needs no auth and lists every model in the OpenRouter shape', async () => {
    const response = await call(gw, 'GET', '/models');
    expect(response.status).toBe(200);
    expect(String(response.headers['content-type'])).toMatch(/^application\/json/);
    const body = response.json;
    expect(Object.keys(body).sort()).toEqual(['data', 'links', 'total_count']);
    expect(body.links).toEqual({ next: null });
    expect(body.total_count).toBe(body.data.length);
    expect(body.total_count).toBe(gw.config.models.length);
    const ids = body.data.map((m: { id: string }) => m.id);
    expect(ids).toContain('test/chat');
    expect(ids).toContain('test/chat:free');

    for (const model of body.data) {
      expectFields(model, MODEL_FIELDS);
      expectFields(model.architecture, { modality: 'string', input_modalities: 'array', output_modalities: 'array' });
      expectPricing(model.pricing);
      expectFields(model.top_provider, {
        is_moderated: 'boolean',
        context_length: 'int|null',
        max_completion_tokens: 'int|null',
      });
      expect(model.links).toEqual({ details: `/api/v1/models/${model.id}/endpoints` });
    }

    const paid = body.data.find((m: { id: string }) => m.id === 'test/chat');
    expect(paid).toMatchObject({ canonical_slug: 'test/chat', name: 'test/chat', context_length: 8192 });
    expect(paid.architecture).toMatchObject({
      modality: 'text->text',
      input_modalities: ['text'],
      output_modalities: ['text'],
    });
    expect(Number(paid.pricing.prompt)).toBe(0.000001);
    expect(Number(paid.pricing.completion)).toBe(0.000002);
    expect(paid.top_provider.max_completion_tokens).toBe(1024);
    const free = body.data.find((m: { id: string }) => m.id === 'test/chat:free');
    expect(Number(free.pricing.prompt)).toBe(0);
    expect(Number(free.pricing.completion)).toBe(0);
    expectNoLeak(response.text);
    expect(response.text).not.toContain('upstream-secret-key');
    expect(response.text).not.toContain(gw.provider.url);
  });

  it('an auth header is not required but does no harm', async () => {
    const response = await call(gw, 'GET', '/models', { headers: { authorization: 'Bearer nonsense' } });
    expect(response.status).toBe(200);
  });

  it('GET /models/{author}/{slug}/endpoints lists the endpoints', async () => {
    const response = await call(gw, 'GET', '/models/test/failover/endpoints');
    expect(response.status).toBe(200);
    const data = response.json.data;
    expectFields(data, {
      id: 'string',
      name: 'string',
      created: 'int',
      description: 'string',
      architecture: 'object',
      endpoints: 'array',
    });
    expect(data.id).toBe('test/failover');
    expect(data.architecture).toHaveProperty('tokenizer');
    expect(data.architecture).toHaveProperty('instruct_type');
    expect(data.endpoints).toHaveLength(2);
    for (const endpoint of data.endpoints) {
      expectFields(endpoint, ENDPOINT_FIELDS);
      expectPricing(endpoint.pricing);
      expectFields(endpoint.supports_tool_choice, {
        auto: 'boolean',
        none: 'boolean',
        required: 'boolean',
        function: 'boolean',
      });
      expectPercentiles(endpoint.latency_last_30m);
      expectPercentiles(endpoint.throughput_last_30m);
      expect(endpoint.model_id).toBe('test/failover');
    }
    expect(data.endpoints.map((e: { tag: string }) => e.tag).sort()).toEqual(['mock', 'mock-b']);
    expect(data.endpoints.map((e: { provider_name: string }) => e.provider_name).sort()).toEqual(['Mock', 'Mock B']);
    expect(response.text).not.toContain('upstream-secret-key');
    expect(response.text).not.toContain(gw.provider.url);
  });

  it('accepts a percent-encoded variant in the path', async () => {
    for (const path of [
      '/models/test/chat%3Afree/endpoints',
      '/models/test/chat%3afree/endpoints',
      '/models/test/chat:free/endpoints',
    ]) {
      const response = await call(gw, 'GET', path);
      expect(response.status, path).toBe(200);
      expect(response.json.data.id).toBe('test/chat:free');
      expect(response.json.data.endpoints).toHaveLength(1);
      expect(Number(response.json.data.endpoints[0].pricing.prompt)).toBe(0);
    }
  });

  it('follows links.details of every model', async () => {
    const models = (await call(gw, 'GET', '/models')).json.data as { id: string; links: { details: string } }[];
    for (const model of models) {
      const path = model.links.details.replace(/^\/api\/v1/, '');
      const response = await call(gw, 'GET', path);
      expect(response.status, path).toBe(200);
      expect(response.json.data.id).toBe(model.id);
    }
  });

  it('an unknown model is a 404 error record', async () => {
    expectError(await call(gw, 'GET', '/models/test/nope/endpoints'), 404);
    expectError(await call(gw, 'GET', '/models/nobody/nothing%3Afree/endpoints'), 404);
  });

  it('GET /providers lists name, slug and privacy_policy_url', async () => {
    const response = await call(gw, 'GET', '/providers');
    expect(response.status).toBe(200);
    expect(Object.keys(response.json)).toEqual(['data']);
    for (const provider of response.json.data)
      expectFields(provider, { name: 'string', slug: 'string', privacy_policy_url: 'string|null' });
    expect(response.json.data.map((p: { slug: string }) => p.slug).sort()).toEqual(['mock', 'mock-b']);
    expect(response.text).not.toContain('upstream-secret-key');
    expect(response.text).not.toContain(gw.provider.url);
  });
});

describe('GET /models paging (as @openrouter/sdk asks for it)', () => {
  it('honours offset and limit, keeps total_count, and rejects bad values', async () => {
    const { startTestGateway, getJson } = await import('./helpers/gateway.js');
    const { sqliteTarget } = await import('./helpers/store-targets.js');
    const gw = await startTestGateway({ target: sqliteTarget });
    try {
      const all = await getJson(gw, '/models');
      const total = all.json.total_count as number;
      expect(all.json.data).toHaveLength(total);
      const page = await getJson(gw, '/models?offset=2&limit=3');
      expect(page.json.data.map((m: { id: string }) => m.id)).toEqual(
        all.json.data.slice(2, 5).map((m: { id: string }) => m.id),
      );
      expect(page.json.total_count).toBe(total);
      // links.next names the following page with the same parameters, until the last.
      expect(page.json.links).toEqual({ next: '/api/v1/models?offset=5&limit=3' });
      const next = await getJson(gw, page.json.links.next.replace('/api/v1', ''));
      expect(next.json.data.map((m: { id: string }) => m.id)).toEqual(
        all.json.data.slice(5, 8).map((m: { id: string }) => m.id),
      );
      expect((await getJson(gw, `/models?offset=${total - 2}&limit=2`)).json.links).toEqual({ next: null });
      expect(all.json.links).toEqual({ next: null });
      const filtered = await getJson(gw, '/models?supported_parameters=tools&limit=1');
      expect(filtered.json.links.next).toBe('/api/v1/models?supported_parameters=tools&limit=1&offset=1');
      expect((await getJson(gw, `/models?offset=${total}&limit=500`)).json.data).toEqual([]);
      expect((await getJson(gw, '/models?limit=0')).status).toBe(400);
      expect((await getJson(gw, '/models?offset=-1')).status).toBe(400);
      // The documented range of every paged listing: decimal digits, 0 to 1,000,000.
      for (const query of ['offset=0x10', 'offset=1000001', 'offset=1e3', 'limit=0x10', 'limit=1000001'])
        expect((await getJson(gw, `/models?${query}`)).status, query).toBe(400);
    } finally {
      await gw.close();
    }
  });

  it("a model's supported_parameters are its endpoints' when the model lists none", async () => {
    const { startTestGateway, getJson } = await import('./helpers/gateway.js');
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) =>
        (file.models as unknown[]).push({
          id: 'test/listed',
          name: 'listed',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock-chat',
              pricing: { prompt: '0', completion: '0.000001' },
              supported_parameters: ['max_tokens', 'reasoning_effort'],
            },
            {
              provider: 'mock-b',
              model: 'mock-chat',
              pricing: { prompt: '0', completion: '0.000002' },
              supported_parameters: ['max_tokens', 'tools'],
            },
          ],
        }),
    });
    try {
      const models = await getJson(gw, '/models');
      const listed = (models.json.data as { id: string; supported_parameters: string[] }[]).find(
        (m) => m.id === 'test/listed',
      )!;
      // The union of what the endpoints take — not the default list (it showed frequency_penalty, not reasoning_effort).
      expect([...listed.supported_parameters].sort()).toEqual(['max_tokens', 'reasoning_effort', 'tools']);
    } finally {
      await gw.close();
    }
  });
});

describe('the model calls @openrouter/sdk makes beyond the listing (each a 404 before)', () => {
  it('count, one model, the key’s models, parameter and modality filters, and the ZDR endpoints', async () => {
    const { getJson } = await import('./helpers/gateway.js');
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) =>
        (file.models as unknown[]).push({
          id: 'test/private',
          name: 'private',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock-chat',
              pricing: { prompt: '0', completion: '0.000001' },
              supported_parameters: ['max_tokens', 'reasoning_effort'],
              zdr: true,
            },
            { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0', completion: '0.000002' } },
          ],
        }),
    });
    try {
      const all = (await getJson(gw, '/models')).json.data as { id: string }[];
      expect((await getJson(gw, '/models/count')).json).toEqual({ data: { count: all.length } });
      expect((await getJson(gw, '/models/count?output_modalities=all')).json.data.count).toBe(all.length);
      expect((await getJson(gw, '/models/count?output_modalities=image')).json.data.count).toBe(0);

      const one = await getJson(gw, '/model/test/private');
      expect(one.status).toBe(200);
      expectFields(one.json.data, MODEL_FIELDS);
      expect(one.json.data).toEqual(all.find((m) => m.id === 'test/private'));
      const missing = await call(gw, 'GET', '/model/test/nope');
      expectError(missing, 404);
      expect(missing.json.error.message).toBe('Model test/nope not found');

      const filtered = await getJson(gw, '/models?supported_parameters=reasoning_effort');
      expect(filtered.json.data.map((m: { id: string }) => m.id)).toEqual(['test/private']);
      expect(filtered.json.total_count).toBe(1);
      expect((await getJson(gw, '/models?supported_parameters=reasoning_effort,no_such')).json.data).toEqual([]);

      const zdr = await getJson(gw, '/endpoints/zdr');
      expect(zdr.json.data.map((e: { model_id: string; tag: string }) => `${e.model_id}@${e.tag}`)).toEqual([
        'test/private@mock',
      ]);
      for (const e of zdr.json.data) expectFields(e, ENDPOINT_FIELDS);

      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId, { allowed_models: ['test/private'] });
      expectError(await call(gw, 'GET', '/models/user'), 401);
      const mine = await getJson(gw, '/models/user', key);
      expect(mine.json.data.map((m: { id: string }) => m.id)).toEqual(['test/private']);
      const everyone = await getJson(gw, '/models/user', (await gw.createKey(accountId)).key);
      expect(everyone.json.total_count).toBe(all.length);
    } finally {
      await gw.close();
    }
  });
});
