/**
 * Key guardrails (docs/api.md 403, docs/architecture.md): `allowed_models` / `allowed_providers`, set through
 * the management API and the admin API, enforced on the next request, refused with 403 and no side
 * effect (no charge, no generation, no upstream call, no free-model slot).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, HELLO, type CallResult } from './helpers/api.js';
import { balanceUnits, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

describe.each(STORE_TARGETS)('key guardrails ($name)', (target) => {
  let gw: TestGateway;
  let accountId: string;
  let management: string;

  const keys = (method: 'GET' | 'POST' | 'PATCH', path: string, json?: unknown) =>
    call(gw, method, `/keys${path}`, json === undefined ? { key: management } : { key: management, json });
  const complete = (key: string, body: Record<string, unknown>) =>
    call(gw, 'POST', '/chat/completions', { key, json: { messages: HELLO, ...body } });

  interface Snapshot {
    balance: number;
    upstream: number;
    usage: number;
    freeUsed: number;
  }

  async function snapshot(key: string): Promise<Snapshot> {
    const info = await getJson(gw, '/key', key);
    return {
      balance: await balanceUnits(gw, accountId),
      upstream: gw.provider.stats.requests,
      usage: info.json.data.usage,
      freeUsed: info.json.data.free_model_daily_requests.used,
    };
  }

  /** A refusal: the error record, and nothing charged, recorded, forwarded or counted. */
  async function expectRefusedWithoutEffect(
    key: string,
    refused: Promise<CallResult>,
    status: number,
    message: string | RegExp,
  ) {
    const before = await snapshot(key);
    const result = await refused;
    const error = expectError(result, status, message);
    const generationId = String(result.headers['x-generation-id']);
    expect(generationId).toMatch(/^gen-/);
    expect((await getJson(gw, `/generation?id=${generationId}`, key)).status).toBe(404);
    expect(await snapshot(key)).toEqual(before);
    return error;
  }

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    accountId = await gw.createAccount(10);
    management = (await gw.createKey(accountId, { management: true })).key;
  });
  afterAll(() => gw.close());

  it('management API: POST /keys sets both lists; a request outside them is 403 naming the model or provider, with no effect', async () => {
    const created = await keys('POST', '', {
      name: 'guarded',
      allowed_models: ['test/chat', 'test/failover'],
      allowed_providers: ['mock'],
    });
    expect(created.status).toBe(201);
    expect(created.json.data).toMatchObject({
      allowed_models: ['test/chat', 'test/failover'],
      allowed_providers: ['mock'],
    });
    expect((await keys('GET', `/${created.json.data.hash}`)).json.data).toMatchObject({
      allowed_models: ['test/chat', 'test/failover'],
      allowed_providers: ['mock'],
    });
    const key = created.json.key as string;

    expect((await complete(key, { model: 'test/chat' })).status).toBe(200);
    const model = await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/paced' }),
      403,
      'This key is not allowed to use test/paced',
    );
    expect(model.metadata).toEqual({ model: 'test/paced' });
    // Exact ids: the `:free` variant is another model.
    await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/chat:free' }),
      403,
      'This key is not allowed to use test/chat:free',
    );
  });

  it('a model whose only providers are not allowed is refused naming them; an allowed provider of the model still serves', async () => {
    const { key } = (await keys('POST', '', { name: 'mock-b only', allowed_providers: ['mock-b'] })).json;
    const error = await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/chat' }),
      403,
      'This key is not allowed to use any provider of test/chat: mock is not among its allowed providers',
    );
    expect(error.metadata).toEqual({ model: 'test/chat', providers: ['mock'] });
    // test/failover is served by mock (first, failing) and mock-b: only mock-b is tried.
    const upstream = gw.provider.stats.requests;
    const served = await complete(key, { model: 'test/failover' });
    expect(served.status).toBe(200);
    expect(served.json.provider).toBe('Mock B');
    expect(gw.provider.stats.requests - upstream).toBe(1);
  });

  it('the fallback list skips models the key may not use', async () => {
    const { key } = (await keys('POST', '', { name: 'fallback only', allowed_models: ['test/failover'] })).json;
    const served = await complete(key, { model: 'test/chat', models: ['test/failover'] });
    expect(served.status).toBe(200);
    expect(served.json.model).toBe('test/failover');
  });

  it('a streaming request outside the guardrails gets a real 403, not a 200 stream', async () => {
    const { key } = (await keys('POST', '', { name: 'stream guard', allowed_models: ['test/chat'] })).json;
    const error = await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/paced', stream: true }),
      403,
      'This key is not allowed to use test/paced',
    );
    expect(error.code).toBe(403);
  });

  it('PATCH /keys/:hash changes the lists for the very next request; null removes a restriction', async () => {
    const created = (await keys('POST', '', { name: 'patched', allowed_models: ['test/chat'] })).json;
    const { key, data } = created;
    expect((await complete(key, { model: 'test/chat' })).status).toBe(200); // the key is now cached
    await expectRefusedWithoutEffect(key, complete(key, { model: 'test/paced' }), 403, /test\/paced/);

    const widened = await keys('PATCH', `/${data.hash}`, { allowed_models: null, allowed_providers: ['mock-b'] });
    expect(widened.status).toBe(200);
    expect(widened.json.data).toMatchObject({ allowed_models: null, allowed_providers: ['mock-b'] });
    await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/paced' }),
      403,
      /any provider of test\/paced: mock is not/,
    );

    const open = await keys('PATCH', `/${data.hash}`, { allowed_providers: null });
    expect(open.json.data).toMatchObject({ allowed_models: null, allowed_providers: null });
    expect((await complete(key, { model: 'test/paced' })).status).toBe(200);
  });

  it('admin API: POST /admin/accounts/:id/keys and PATCH /admin/keys/:hash set the lists, effective at once', async () => {
    const created = await gw.admin('POST', `/accounts/${accountId}/keys`, {
      name: 'admin guarded',
      allowed_models: ['test/chat'],
      allowed_providers: ['mock'],
    });
    expect(created.status).toBe(201);
    expect(created.json.data).toMatchObject({ allowed_models: ['test/chat'], allowed_providers: ['mock'] });
    const key = created.json.key as string;
    const hash = created.json.data.hash as string;
    expect((await complete(key, { model: 'test/chat' })).status).toBe(200);
    await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/failover' }),
      403,
      'This key is not allowed to use test/failover',
    );

    const patched = await gw.admin('PATCH', `/keys/${hash}`, { allowed_models: ['test/failover'] });
    expect(patched.status).toBe(200);
    expect(patched.json.data).toMatchObject({ allowed_models: ['test/failover'], allowed_providers: ['mock'] });
    await expectRefusedWithoutEffect(
      key,
      complete(key, { model: 'test/chat' }),
      403,
      'This key is not allowed to use test/chat',
    );
    // test/failover: mock fails (503), mock-b is not allowed → the upstream error, not a guardrail refusal.
    expect((await complete(key, { model: 'test/failover' })).status).toBe(502);

    const cleared = await gw.admin('PATCH', `/keys/${hash}`, { allowed_models: null, allowed_providers: null });
    expect(cleared.json.data).toMatchObject({ allowed_models: null, allowed_providers: null });
    expect((await complete(key, { model: 'test/chat' })).status).toBe(200);
    expect((await complete(key, { model: 'test/failover' })).status).toBe(200);
  });

  it('refuses unknown ids (400 naming them), empty lists and wrong types; a refused PATCH changes nothing', async () => {
    expectError(
      await keys('POST', '', { name: 'x', allowed_models: ['test/chat', 'nope/model'] }),
      400,
      'allowed_models: "nope/model" is not a valid model ID',
    );
    expectError(
      await keys('POST', '', { name: 'x', allowed_models: ['a/b', 'c/d'] }),
      400,
      'allowed_models: "a/b", "c/d" are not valid model IDs',
    );
    expectError(
      await keys('POST', '', { name: 'x', allowed_providers: ['ghost'] }),
      400,
      'allowed_providers: "ghost" is not a known provider',
    );
    expectError(
      await keys('POST', '', { name: 'x', allowed_models: [] }),
      400,
      'allowed_models must list at least one id; use null to remove the restriction',
    );
    expectError(await keys('POST', '', { name: 'x', allowed_providers: 'mock' }), 400);
    const adminCreate = await gw.admin('POST', `/accounts/${accountId}/keys`, {
      name: 'x',
      allowed_providers: ['ghost'],
    });
    expect(adminCreate.status).toBe(400);
    expect(adminCreate.json.error.message).toBe('allowed_providers: "ghost" is not a known provider');

    const { data } = (
      await keys('POST', '', { name: 'kept', allowed_models: ['test/chat', 'test/chat'], allowed_providers: ['mock'] })
    ).json;
    expect(data.allowed_models).toEqual(['test/chat']); // duplicates dropped
    expectError(
      await keys('PATCH', `/${data.hash}`, { name: 'renamed', allowed_models: ['test/chat', 'nope/model'] }),
      400,
      /nope\/model/,
    );
    const adminPatch = await gw.admin('PATCH', `/keys/${data.hash}`, { allowed_providers: ['mock', 'ghost'] });
    expect(adminPatch.status).toBe(400);
    expect((await keys('GET', `/${data.hash}`)).json.data).toMatchObject({
      name: 'kept',
      allowed_models: ['test/chat'],
      allowed_providers: ['mock'],
    });
  });
});
