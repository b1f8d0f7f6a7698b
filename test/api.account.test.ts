/** docs/api.md GET /key, §3.3 GET /credits, §3.4 GET /generation. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectFields, HELLO, units } from './helpers/api.js';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const KEY_INFO_FIELDS = {
  label: 'string',
  limit: 'number|null',
  limit_remaining: 'number|null',
  limit_reset: 'string|null',
  include_byok_in_limit: 'boolean',
  usage: 'number',
  usage_daily: 'number',
  usage_weekly: 'number',
  usage_monthly: 'number',
  byok_usage: 'number',
  byok_usage_daily: 'number',
  byok_usage_weekly: 'number',
  byok_usage_monthly: 'number',
  is_free_tier: 'boolean',
  is_management_key: 'boolean',
  is_provisioning_key: 'boolean',
  free_model_daily_requests: 'object',
  rate_limit: 'object',
  creator_user_id: 'string|null',
  organization_id: 'string|null',
  workspace_id: 'string|null',
  allowed_data_regions: 'array',
} as const;

/** §3.4: required and non-null. */
const GENERATION_NON_NULL = {
  id: 'string',
  created_at: 'string',
  model: 'string',
  origin: 'string',
  total_cost: 'number',
  usage: 'number',
  is_byok: 'boolean',
  data_region: 'string',
} as const;

/** §3.4: required, value may be null. */
const GENERATION_NULLABLE = [
  'api_type',
  'app_id',
  'cache_discount',
  'cancelled',
  'external_user',
  'finish_reason',
  'generation_time',
  'http_referer',
  'latency',
  'moderation_latency',
  'native_finish_reason',
  'native_tokens_cached',
  'native_tokens_completion',
  'native_tokens_completion_images',
  'native_tokens_prompt',
  'native_tokens_reasoning',
  'num_fetches',
  'num_input_audio_prompt',
  'num_media_completion',
  'num_media_prompt',
  'num_search_results',
  'preset_id',
  'provider_name',
  'provider_responses',
  'router',
  'service_tier',
  'streamed',
  'tokens_completion',
  'tokens_prompt',
  'upstream_id',
  'upstream_inference_cost',
  'user_agent',
  'web_search_engine',
  'workspace_id',
] as const;

function expectGeneration(data: Record<string, unknown>, id: string, cost: number): void {
  expectFields(data, GENERATION_NON_NULL);
  for (const field of GENERATION_NULLABLE) expect(data, `field ${field}`).toHaveProperty([field]);
  expect(data.id).toBe(id);
  expect(Number.isNaN(Date.parse(data.created_at as string))).toBe(false);
  expect(data.model).toBe('test/chat');
  expect(data.total_cost).toBe(cost);
  expect(data.is_byok).toBe(false);
  expect(data.api_type).toBe('completions');
  expect(data.provider_name).toBe('Mock');
  expect(data.cancelled).toBe(false);
  expect(data.finish_reason).toBe('stop');
  expect(Number.isInteger(data.tokens_prompt) && (data.tokens_prompt as number) > 0).toBe(true);
  expect(Number.isInteger(data.tokens_completion) && (data.tokens_completion as number) > 0).toBe(true);
  const attempts = data.provider_responses as unknown[];
  expect(Array.isArray(attempts)).toBe(true);
  expect(attempts).toHaveLength(1);
  expect(attempts[0]).toMatchObject({ provider_name: 'Mock', status: 200 });
  expect(typeof (attempts[0] as { latency: unknown }).latency).toBe('number');
}

describe.each(STORE_TARGETS)('account ($name)', (target) => {
  let gw: TestGateway;
  let accountId: string;
  let key: string;
  let management: string;
  let otherKey: string;

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    accountId = await gw.createAccount(5, 'grant');
    key = (await gw.createKey(accountId)).key;
    management = (await gw.createKey(accountId, { management: true })).key;
    otherKey = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw.close());

  it('GET /key has every field of §3.1 with its type', async () => {
    const info = await call(gw, 'GET', '/key', { key });
    expect(info.status).toBe(200);
    expect(String(info.headers['content-type'])).toMatch(/^application\/json/);
    expect(Object.keys(info.json)).toEqual(['data']);
    const data = info.json.data;
    expectFields(data, KEY_INFO_FIELDS);
    expect(data.label).toBe(`sk-tg-v1-${key.slice(9, 12)}...${key.slice(-3)}`);
    expect(data).toMatchObject({
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      is_management_key: false,
      is_provisioning_key: false,
      usage: 0,
      byok_usage: 0,
    });
    expect(data.rate_limit).toEqual({
      requests: -1,
      interval: '10s',
      note: 'This field is deprecated and safe to ignore.',
    });
    const free = data.free_model_daily_requests;
    expect(Object.keys(free).sort()).toEqual(['limit', 'remaining', 'used']);
    for (const n of Object.values(free)) expect(Number.isInteger(n)).toBe(true);
    expect(free.remaining).toBe(free.limit - free.used);
    expect(data.allowed_data_regions).toEqual(['global']);
    if ('expires_at' in data) expect(data.expires_at).toBeNull();

    const withExpiry = await gw.createKey(accountId, {
      expires_at: '2099-01-01T00:00:00.000Z',
      limit: 2,
      limit_reset: 'monthly',
    });
    const limited = (await call(gw, 'GET', '/key', { key: withExpiry.key })).json.data;
    expectFields(limited, KEY_INFO_FIELDS);
    expect(limited).toMatchObject({
      expires_at: '2099-01-01T00:00:00.000Z',
      limit: 2,
      limit_remaining: 2,
      limit_reset: 'monthly',
    });

    const mgmt = (await call(gw, 'GET', '/key', { key: management })).json.data;
    expectFields(mgmt, KEY_INFO_FIELDS);
    expect(mgmt).toMatchObject({ is_management_key: true, is_provisioning_key: true });
  });

  it('is_free_tier stays true after grants and turns false after a purchase', async () => {
    const fresh = await gw.createAccount(3, 'grant');
    const freshKey = (await gw.createKey(fresh)).key;
    const before = (await call(gw, 'GET', '/key', { key: freshKey })).json.data;
    expect(before.is_free_tier).toBe(true);
    expect(before.free_model_daily_requests).toEqual({ limit: 50, used: 0, remaining: 50 });

    expect((await chat(gw, freshKey, { model: 'test/chat:free', messages: HELLO })).status).toBe(200);
    const afterFree = (await call(gw, 'GET', '/key', { key: freshKey })).json.data;
    expect(afterFree.free_model_daily_requests).toEqual({ limit: 50, used: 1, remaining: 49 });

    const adjusted = await gw.admin('POST', `/accounts/${fresh}/credits`, { amount: 1, kind: 'adjustment' });
    expect(adjusted.status).toBe(201);
    expect((await call(gw, 'GET', '/key', { key: freshKey })).json.data.is_free_tier).toBe(true);

    const purchased = await gw.admin('POST', `/accounts/${fresh}/credits`, { amount: 10, kind: 'purchase' });
    expect(purchased.status).toBe(201);
    const after = (await call(gw, 'GET', '/key', { key: freshKey })).json.data;
    expect(after.is_free_tier).toBe(false);
    // Purchases of >= 10 USD raise the free-model daily cap (docs/api.md).
    expect(after.free_model_daily_requests).toEqual({ limit: 1000, used: 1, remaining: 999 });
  });

  it('GET /credits reports credits granted and purchased, and usage charged', async () => {
    const fresh = await gw.createAccount(2, 'grant');
    const freshKey = (await gw.createKey(fresh)).key;
    const freshManagement = (await gw.createKey(fresh, { management: true })).key;
    expect((await gw.admin('POST', `/accounts/${fresh}/credits`, { amount: 3.25, kind: 'purchase' })).status).toBe(201);

    const credits = await call(gw, 'GET', '/credits', { key: freshKey });
    expect(credits.status).toBe(200);
    expect(credits.json).toEqual({ data: { total_credits: 5.25, total_usage: 0 } });

    const completion = await chat(gw, freshKey, { model: 'test/chat', messages: HELLO });
    expect(completion.status).toBe(200);
    const cost = completion.json.usage.cost as number;
    const stream = await chatStream(gw, freshKey, { model: 'test/chat', messages: HELLO });
    expect(stream.status).toBe(200);
    const streamCost = stream.events.at(-1).usage.cost as number;

    const after = await call(gw, 'GET', '/credits', { key: freshManagement });
    expect(after.status).toBe(200);
    expect(after.json.data.total_credits).toBe(5.25);
    expect(units(after.json.data.total_usage)).toBe(units(cost) + units(streamCost));
    const account = await gw.admin('GET', `/accounts/${fresh}`);
    expect(units(account.json.data.balance)).toBe(units(5.25) - units(cost) - units(streamCost));

    expect((await gw.admin('POST', `/accounts/${fresh}/credits`, { amount: -0.25, kind: 'adjustment' })).status).toBe(
      201,
    );
    const adjusted = await call(gw, 'GET', '/credits', { key: freshKey });
    expect(adjusted.json.data.total_credits).toBe(5);
    expectError(await call(gw, 'GET', '/credits'), 401);
  });

  it('GET /generation returns the record of a non-streamed completion right away', async () => {
    const completion = await chat(
      gw,
      key,
      { model: 'test/chat', messages: HELLO, user: 'end-user-1' },
      { 'HTTP-Referer': 'https://app.example', 'X-Title': 'Example App' },
    );
    expect(completion.status).toBe(200);
    const id = completion.json.id as string;
    expect(id).toMatch(/^gen-/);
    expect(completion.headers['x-generation-id']).toBe(id);

    const generation = await call(gw, 'GET', `/generation?id=${encodeURIComponent(id)}`, { key });
    expect(generation.status).toBe(200);
    expect(Object.keys(generation.json)).toEqual(['data']);
    const data = generation.json.data;
    expectGeneration(data, id, completion.json.usage.cost);
    expect(data.streamed).toBe(false);
    expect(data.tokens_prompt).toBe(completion.json.usage.prompt_tokens);
    expect(data.tokens_completion).toBe(completion.json.usage.completion_tokens);
    expect(data.http_referer).toBe('https://app.example');
    expect(data.origin).toBe('https://app.example');
    expect(data.external_user).toBe('end-user-1');

    // The management key of the same account may read it too.
    expect((await call(gw, 'GET', `/generation?id=${id}`, { key: management })).status).toBe(200);
  });

  it('GET /generation returns the record of a streamed completion right away', async () => {
    const stream = await chatStream(gw, key, { model: 'test/chat', messages: HELLO });
    expect(stream.status).toBe(200);
    expect(stream.done).toBe(true);
    const id = stream.events[0].id as string;
    expect(stream.headers['x-generation-id']).toBe(id);
    const usageChunk = stream.events.at(-1);
    expect(usageChunk.choices).toEqual([]);

    const generation = await call(gw, 'GET', `/generation?id=${id}`, { key });
    expect(generation.status).toBe(200);
    expectGeneration(generation.json.data, id, usageChunk.usage.cost);
    expect(generation.json.data.streamed).toBe(true);
    expect(generation.json.data.tokens_completion).toBe(usageChunk.usage.completion_tokens);
  });

  it('GET /generation: unknown id → 404, another account → 404, missing id → 400', async () => {
    const completion = await chat(gw, key, { model: 'test/chat', messages: HELLO });
    const id = completion.json.id as string;
    expectError(await call(gw, 'GET', `/generation?id=${id}`, { key: otherKey }), 404);
    expectError(await call(gw, 'GET', '/generation?id=gen-0000000000-unknown', { key }), 404);
    expectError(await call(gw, 'GET', `/generation?id=${'x'.repeat(500)}`, { key }), 404);
    expectError(await call(gw, 'GET', '/generation', { key }), 400);
    expectError(await call(gw, 'GET', '/generation?id=', { key }), 400);
    expectError(await call(gw, 'GET', `/generation?id=${id}`), 401);
  });
});

describe.each(STORE_TARGETS)('credit admission, 402 ($name)', (target) => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ target });
  });
  afterAll(() => gw.close());

  async function snapshot(accountId: string, key: string) {
    const account = (await gw.admin('GET', `/accounts/${accountId}`)).json.data;
    const info = (await call(gw, 'GET', '/key', { key })).json.data;
    return {
      balance: account.balance,
      total_usage: account.total_usage,
      key_usage: info.usage,
      limit_remaining: info.limit_remaining,
    };
  }

  /** A refused request: 402 with the message, an id that names no generation, and nothing changed. */
  async function expectRefused(accountId: string, key: string, model: string, message: string | RegExp) {
    const before = await snapshot(accountId, key);
    const response = await chat(gw, key, { model, messages: HELLO });
    expectError(response, 402, message);
    const id = response.headers['x-generation-id'] as string;
    expect(id).toMatch(/^gen-/);
    expectError(await call(gw, 'GET', `/generation?id=${id}`, { key }), 404);
    const stream = await chatStream(gw, key, { model, messages: HELLO });
    expectError({ status: stream.status, headers: stream.headers, text: stream.raw }, 402, message);
    expect(await snapshot(accountId, key)).toEqual(before);
  }

  it('a paid model needs a positive balance: exactly 0 → 402', async () => {
    const empty = await gw.createAccount(0);
    const key = (await gw.createKey(empty)).key;
    await expectRefused(empty, key, 'test/chat', /^Insufficient credits/);

    const zeroed = await gw.createAccount(1, 'grant');
    expect(
      (await gw.admin('POST', `/accounts/${zeroed}/credits`, { amount: -1, kind: 'adjustment' })).json.data.balance,
    ).toBe(0);
    const zeroedKey = (await gw.createKey(zeroed)).key;
    await expectRefused(zeroed, zeroedKey, 'test/chat', /^Insufficient credits/);
  });

  it('a :free model is served at balance 0, and charges nothing', async () => {
    const empty = await gw.createAccount(0);
    const key = (await gw.createKey(empty)).key;
    const response = await chat(gw, key, { model: 'test/chat:free', messages: HELLO });
    expect(response.status).toBe(200);
    expect(response.json.usage.cost).toBe(0);
    const stream = await chatStream(gw, key, { model: 'test/chat:free', messages: HELLO });
    expect(stream.status).toBe(200);
    expect(stream.events.at(-1).usage.cost).toBe(0);
    expect((await gw.admin('GET', `/accounts/${empty}`)).json.data.balance).toBe(0);
  });

  it('a negative balance refuses every model, :free included', async () => {
    const owing = await gw.createAccount(1, 'grant');
    const key = (await gw.createKey(owing)).key;
    expect((await chat(gw, key, { model: 'test/chat:free', messages: HELLO })).status).toBe(200);
    const adjusted = await gw.admin('POST', `/accounts/${owing}/credits`, { amount: -1.5, kind: 'adjustment' });
    expect(adjusted.status).toBe(201);
    expect(adjusted.json.data.balance).toBe(-0.5);
    await expectRefused(owing, key, 'test/chat:free', /^Insufficient credits/);
    await expectRefused(owing, key, 'test/chat', /^Insufficient credits/);
  });

  it("a key's exhausted total limit → 402 Key limit exceeded (total limit)", async () => {
    const rich = await gw.createAccount(10);
    const key = (await gw.createKey(rich, { limit: 0.00001 })).key;
    const first = await chat(gw, key, { model: 'test/chat', messages: HELLO });
    expect(first.status).toBe(200);
    expect(first.json.usage.cost).toBeGreaterThan(0.00001);
    const info = (await call(gw, 'GET', '/key', { key })).json.data;
    expect(info.limit_remaining).toBe(0);
    expect(info.usage).toBe(first.json.usage.cost);
    await expectRefused(rich, key, 'test/chat', 'Key limit exceeded (total limit)');
    // The key's own limit applies to free models too; the account's other keys are unaffected.
    await expectRefused(rich, key, 'test/chat:free', 'Key limit exceeded (total limit)');
    const other = (await gw.createKey(rich)).key;
    expect((await chat(gw, other, { model: 'test/chat', messages: HELLO })).status).toBe(200);
  });

  it('a daily limit says daily; a zero limit refuses at once', async () => {
    const rich = await gw.createAccount(10);
    const daily = (await gw.createKey(rich, { limit: 0.00001, limit_reset: 'daily' })).key;
    expect((await chat(gw, daily, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    await expectRefused(rich, daily, 'test/chat', 'Key limit exceeded (daily limit)');

    const weekly = (await gw.createKey(rich, { limit: 0, limit_reset: 'weekly' })).key;
    await expectRefused(rich, weekly, 'test/chat', 'Key limit exceeded (weekly limit)');
    const monthly = (await gw.createKey(rich, { limit: 0, limit_reset: 'monthly' })).key;
    await expectRefused(rich, monthly, 'test/chat', 'Key limit exceeded (monthly limit)');
  });

  it('raising the limit through the API lets the key through again at once', async () => {
    const rich = await gw.createAccount(10);
    const management = (await gw.createKey(rich, { management: true })).key;
    const created = await call(gw, 'POST', '/keys', { key: management, json: { name: 'tight', limit: 0.00001 } });
    const { key } = created.json;
    expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    expectError(await chat(gw, key, { model: 'test/chat', messages: HELLO }), 402);
    const raised = await call(gw, 'PATCH', `/keys/${created.json.data.hash}`, { key: management, json: { limit: 5 } });
    expect(raised.status).toBe(200);
    expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
  });
});
