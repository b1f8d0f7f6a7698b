/**
 * BYOK (docs/api.md, issue 5 item 4): the management API, encryption at rest, routing with the
 * account's own key first, the fee, the byok counters, fail-over to shared capacity, key rotation.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';
import { request } from 'undici';
import { stringify } from 'yaml';
import { parseMasterKey, SecretBox } from '../src/auth/secret-box.js';
import { loadConfig } from '../src/config/load-config.js';

const SHARED_KEY = 'shared-provider-key-000';
const OWN_KEY = 'sk-own-provider-key-1234567890';
const LIST_COST_UNITS = 2_000_000n; // 1000 prompt × 1e-6 + 500 completion × 2e-6 USD
const FEE_UNITS = 100_000n; // 5 %

const units = (usd: number) => BigInt(Math.round(usd * 1e9));

async function call(gw: TestGateway, method: string, path: string, key: string, body?: unknown) {
  const response = await request(`${gw.api}${path}`, {
    method: method as 'GET',
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text ? JSON.parse(text) : null, text };
}

function withRecorder(upstream: RecordingUpstream) {
  return (file: { providers: Record<string, unknown>[]; models: unknown[] }) => {
    // BYOK is opt-in per provider (issue 8, finding 3): `mock` and `rec` accept own keys, `mock-b` does not.
    for (const provider of file.providers) if (provider.id === 'mock') provider.byok = true;
    file.providers.push({
      id: 'rec',
      name: 'Recorder',
      kind: 'openai',
      base_url: upstream.url,
      api_key: SHARED_KEY,
      byok: true,
      headers: { 'OpenAI-Organization': 'org-operator-000' },
    });
    file.models.push({
      id: 'test/rec',
      name: 'Recorded',
      context_length: 8192,
      endpoints: [{ provider: 'rec', model: 'rec-model', pricing: { prompt: '0.000001', completion: '0.000002' } }],
    });
    // Shared capacity elsewhere is cheaper (so ordered first), the own key's provider second.
    file.models.push({
      id: 'test/mixed',
      name: 'Mixed',
      context_length: 8192,
      endpoints: [
        { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.0000005', completion: '0.000001' } },
        { provider: 'rec', model: 'rec-model', pricing: { prompt: '0.000001', completion: '0.000002' } },
      ],
    });
  };
}

describe.each(STORE_TARGETS)('BYOK on $name', (target) => {
  const master = randomBytes(32).toString('hex');
  let upstream: RecordingUpstream;
  let gw: TestGateway;
  let accountId: string;
  let manager: string;
  let inference: { key: string; hash: string };

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway({
      target,
      configure: withRecorder(upstream) as never,
      env: { TOLLGATE_MASTER_KEY: master },
    });
    accountId = await gw.createAccount(10);
    manager = (await gw.createKey(accountId, { management: true })).key;
    inference = await gw.createKey(accountId, { name: 'app', limit: 1, include_byok_in_limit: true });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('manages BYOK keys: 201 on create, never returns the key, stores it encrypted, {deleted: true}', async () => {
    const created = await call(gw, 'POST', '/byok', manager, {
      provider: 'mock',
      key: 'sk-temporary-key-abcdef',
      name: 'temp',
    });
    expect(created.status).toBe(201);
    const data = created.json.data;
    for (const field of [
      'id',
      'label',
      'provider',
      'created_at',
      'disabled',
      'is_byok_only',
      'is_fallback',
      'is_required',
      'sort_order',
      'allowed_api_key_hashes',
      'allowed_models',
      'allowed_user_ids',
      'declared_zdr',
      'workspace_id',
    ]) {
      expect(data, field).toHaveProperty(field);
    }
    expect(created.text).not.toContain('sk-temporary-key-abcdef');
    expect(data.label).toBe('sk-...cdef');
    const stored = await gw.store.byok.get(data.id);
    expect(stored?.ciphertext).not.toContain('sk-temporary-key-abcdef');

    const listed = await call(gw, 'GET', '/byok', manager);
    expect(listed.status).toBe(200);
    expect(listed.json.total_count).toBe(listed.json.data.length);
    expect(listed.text).not.toContain('sk-temporary-key-abcdef');
    expect((await call(gw, 'PATCH', `/byok/${data.id}`, manager, { disabled: true })).json.data.disabled).toBe(true);
    expect((await call(gw, 'GET', `/byok/${data.id}`, manager)).status).toBe(200);
    expect((await call(gw, 'DELETE', `/byok/${data.id}`, manager)).json).toEqual({ deleted: true });
    expect((await call(gw, 'GET', `/byok/${data.id}`, manager)).status).toBe(404);
  });

  it('refuses bad input, inference keys and other accounts', async () => {
    expect((await call(gw, 'POST', '/byok', manager, { provider: 'nope', key: 'sk-1234567890' })).status).toBe(400);
    expect((await call(gw, 'POST', '/byok', manager, { provider: 'mock' })).status).toBe(400);
    // A key that could not travel in a header (an inner newline, a space, a non-ASCII character).
    for (const key of ['sk-1234\n567890', 'sk-1234 567890', 'sk-1234567890\u00e9']) {
      const refused = await call(gw, 'POST', '/byok', manager, { provider: 'mock', key });
      expect(refused.status, JSON.stringify(key)).toBe(400);
      expect(refused.json.error.message).toMatch(/printable ASCII/);
    }
    expect(
      (await call(gw, 'POST', '/byok', manager, { provider: 'mock', key: 'sk-1234567890', allowed_models: ['x/none'] }))
        .status,
    ).toBe(400);
    expect((await call(gw, 'GET', '/byok', inference.key)).status).toBe(401);
    const other = await gw.createKey(await gw.createAccount(1), { management: true });
    const mine = await call(gw, 'POST', '/byok', manager, { provider: 'mock', key: 'sk-mine-1234567890' });
    expect((await call(gw, 'GET', `/byok/${mine.json.data.id}`, other.key)).status).toBe(404);
    expect((await call(gw, 'DELETE', `/byok/${mine.json.data.id}`, other.key)).status).toBe(404);
    await call(gw, 'DELETE', `/byok/${mine.json.data.id}`, manager);
  });

  it('routes with the own key first, charges the fee and counts byok usage', async () => {
    const created = await call(gw, 'POST', '/byok', manager, { provider: 'rec', key: OWN_KEY });
    expect(created.status).toBe(201);
    const before = await gw.admin('GET', `/accounts/${accountId}`);
    upstream.seenKeys.length = 0;
    const answer = await chat(gw, inference.key, { model: 'test/rec', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(200);
    expect(upstream.seenKeys).toEqual([OWN_KEY]);
    // Only the allowlisted headers travel with the own key: never the operator's organisation header.
    expect(upstream.seen.at(-1)!.headers['openai-organization']).toBeUndefined();
    expect(answer.json.usage.is_byok).toBe(true);
    expect(units(answer.json.usage.cost)).toBe(FEE_UNITS);
    expect(units(answer.json.usage.cost_details.upstream_inference_cost)).toBe(LIST_COST_UNITS);

    const generation = await getJson(gw, `/generation?id=${answer.json.id}`, inference.key);
    expect(generation.json.data.is_byok).toBe(true);
    expect(units(generation.json.data.total_cost)).toBe(FEE_UNITS);
    const info = (await getJson(gw, '/key', inference.key)).json.data;
    expect(units(info.usage)).toBe(FEE_UNITS);
    expect(units(info.byok_usage)).toBe(LIST_COST_UNITS);
    expect(units(info.byok_usage_daily)).toBe(LIST_COST_UNITS);
    // include_byok_in_limit: the limit counts the fee and the BYOK usage.
    expect(units(info.limit_remaining)).toBe(1_000_000_000n - FEE_UNITS - LIST_COST_UNITS);
    const after = await gw.admin('GET', `/accounts/${accountId}`);
    expect(units(before.json.data.balance) - units(after.json.data.balance)).toBe(FEE_UNITS);
    await call(gw, 'DELETE', `/byok/${created.json.data.id}`, manager);
  });

  it('tries the own key before cheaper shared capacity of another provider (OpenRouter: own keys first)', async () => {
    const created = await call(gw, 'POST', '/byok', manager, { provider: 'rec', key: OWN_KEY });
    try {
      upstream.seenKeys.length = 0;
      const answer = await chat(gw, inference.key, {
        model: 'test/mixed',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(answer.status).toBe(200);
      expect(answer.json.provider).toBe('Recorder');
      expect(upstream.seenKeys).toEqual([OWN_KEY]);
      expect(answer.json.usage.is_byok).toBe(true);
      expect(units(answer.json.usage.cost)).toBe(FEE_UNITS);
    } finally {
      await call(gw, 'DELETE', `/byok/${created.json.data.id}`, manager);
    }

    // Without an own key the cheaper shared endpoint serves, as before.
    upstream.seenKeys.length = 0;
    const shared = await chat(gw, inference.key, { model: 'test/mixed', messages: [{ role: 'user', content: 'hi' }] });
    expect(shared.status).toBe(200);
    expect(upstream.seenKeys).toEqual([]);
    expect(shared.json.usage.is_byok).toBe(false);
  });

  it('fails over from a rejected own key to shared capacity, billed at list price', async () => {
    const created = await call(gw, 'POST', '/byok', manager, { provider: 'rec', key: 'sk-revoked-own-key-000' });
    upstream.rejectKeys.add('sk-revoked-own-key-000');
    upstream.seenKeys.length = 0;
    const answer = await chat(gw, inference.key, { model: 'test/rec', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(200);
    expect(upstream.seenKeys).toEqual(['sk-revoked-own-key-000', SHARED_KEY]);
    expect(answer.json.usage.is_byok).toBe(false);
    expect(units(answer.json.usage.cost)).toBe(LIST_COST_UNITS);
    const generation = await getJson(gw, `/generation?id=${answer.json.id}`, inference.key);
    expect(generation.json.data.provider_responses.map((r: { status: number }) => r.status)).toEqual([401, 200]);
    await call(gw, 'DELETE', `/byok/${created.json.data.id}`, manager);
  });

  it('honours is_fallback (shared first), is_required (own key only) and allowed_api_key_hashes', async () => {
    const fallback = await call(gw, 'POST', '/byok', manager, { provider: 'rec', key: OWN_KEY, is_fallback: true });
    upstream.seenKeys.length = 0;
    await chat(gw, inference.key, { model: 'test/rec', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstream.seenKeys).toEqual([SHARED_KEY]);
    await call(gw, 'DELETE', `/byok/${fallback.json.data.id}`, manager);

    const required = await call(gw, 'POST', '/byok', manager, {
      provider: 'rec',
      key: 'sk-required-key-0000',
      is_required: true,
    });
    upstream.rejectKeys.add('sk-required-key-0000');
    upstream.seenKeys.length = 0;
    const refused = await chat(gw, inference.key, { model: 'test/rec', messages: [{ role: 'user', content: 'hi' }] });
    expect(refused.status).toBe(502);
    // The upstream's 401 text (which may echo the provider key) never reaches the caller.
    expect(refused.text).not.toContain('Incorrect API key');
    expect(refused.json.error.message).toContain('refused');
    expect(upstream.seenKeys.every((k) => k === 'sk-required-key-0000')).toBe(true);
    await call(gw, 'DELETE', `/byok/${required.json.data.id}`, manager);

    const scoped = await call(gw, 'POST', '/byok', manager, {
      provider: 'rec',
      key: OWN_KEY,
      allowed_api_key_hashes: ['0'.repeat(64)],
    });
    upstream.seenKeys.length = 0;
    await chat(gw, inference.key, { model: 'test/rec', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstream.seenKeys).toEqual([SHARED_KEY]);
    await call(gw, 'DELETE', `/byok/${scoped.json.data.id}`, manager);
  });
});

describe('BYOK only where it means something (issue 8, finding 3)', () => {
  const master = randomBytes(32).toString('hex');
  let upstream: RecordingUpstream;
  let gw: TestGateway;
  let manager: string;
  let inference: string;
  let accountId: string;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway({
      target: STORE_TARGETS[0]!,
      configure: ((file: { providers: Record<string, unknown>[]; models: unknown[] }) => {
        withRecorder(upstream)(file);
        // A keyless local server (vLLM, Ollama) and a keyed provider the operator did not opt in.
        file.providers.push(
          { id: 'local', name: 'Local', kind: 'openai', base_url: upstream.url },
          { id: 'keyed', name: 'Keyed', kind: 'openai', base_url: upstream.url, api_key: SHARED_KEY },
        );
        file.models.push({
          id: 'test/keyed',
          name: 'Keyed',
          context_length: 8192,
          endpoints: [
            { provider: 'keyed', model: 'keyed-model', pricing: { prompt: '0.000001', completion: '0.000002' } },
          ],
        });
      }) as never,
      env: { TOLLGATE_MASTER_KEY: master },
    });
    accountId = await gw.createAccount(5);
    manager = (await gw.createKey(accountId, { management: true })).key;
    inference = (await gw.createKey(accountId)).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('refuses POST /byok for providers without byok: true, naming the reason', async () => {
    for (const provider of ['local', 'keyed', 'mock-b']) {
      const refused = await call(gw, 'POST', '/byok', manager, { provider, key: 'junk-own-key-123456' });
      expect(refused.status, provider).toBe(400);
      expect(refused.json.error.message).toContain(`"${provider}" does not accept BYOK keys`);
    }
    expect((await call(gw, 'GET', '/byok', manager)).json.total_count).toBe(0);
  });

  it('never routes with, and refuses to PATCH, a stored entry of a provider that is no longer BYOK-enabled', async () => {
    // An entry written while `keyed` was BYOK-enabled (the operator has since turned it off).
    const id = 'byok_legacy0000000000000000000000';
    const box = new SecretBox(parseMasterKey(master));
    await gw.store.byok.insert({
      id,
      accountId,
      provider: 'keyed',
      name: null,
      label: 'jun...3456',
      ciphertext: box.encrypt('junk-own-key-123456', id),
      disabled: false,
      isFallback: false,
      isRequired: true,
      sortOrder: 0,
      allowedModels: null,
      allowedKeyHashes: null,
      createdAt: Date.now(),
      updatedAt: null,
    });
    upstream.seenKeys.length = 0;
    const answer = await chat(gw, inference, { model: 'test/keyed', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status, answer.text).toBe(200);
    expect(upstream.seenKeys).toEqual([SHARED_KEY]);
    expect(answer.json.usage.is_byok).toBe(false);
    const patched = await call(gw, 'PATCH', `/byok/${id}`, manager, { is_required: false });
    expect(patched.status).toBe(400);
    expect(patched.json.error.message).toContain('"keyed" does not accept BYOK keys');
    expect((await call(gw, 'DELETE', `/byok/${id}`, manager)).json).toEqual({ deleted: true });
  });

  it('refuses at boot byok: true on a provider without an operator api_key, and on the demo provider', () => {
    const config = (providers: unknown[]) => () => stringify({ providers, models: [] });
    expect(() =>
      loadConfig(
        { TOLLGATE_CONFIG: 'x.yaml' },
        config([{ id: 'local', name: 'Local', kind: 'openai', base_url: 'http://127.0.0.1:1/v1', byok: true }]),
      ),
    ).toThrow(/providers\.0\.byok: byok: true needs the operator's own api_key/);
    expect(() =>
      loadConfig(
        { TOLLGATE_CONFIG: 'x.yaml' },
        config([{ id: 'demo', name: 'Demo', kind: 'demo', api_key: 'x', byok: true }]),
      ),
    ).toThrow(/the demo provider checks no key/);
  });
});

describe('BYOK master key', () => {
  it('is required: without TOLLGATE_MASTER_KEY the BYOK API answers 403', async () => {
    const gw = await startTestGateway({ target: STORE_TARGETS[0]! });
    try {
      const manager = (await gw.createKey(await gw.createAccount(1), { management: true })).key;
      const refused = await call(gw, 'POST', '/byok', manager, { provider: 'mock', key: 'sk-1234567890' });
      expect(refused.status).toBe(403);
      expect(refused.json.error.message).toContain('TOLLGATE_MASTER_KEY');
    } finally {
      await gw.close();
    }
  });

  it('rotates: entries of the previous key still work, rewrap re-encrypts them under the new one', async () => {
    const oldKey = randomBytes(32).toString('hex');
    const newKey = randomBytes(32).toString('base64');
    const upstream = await startRecordingUpstream();
    const database: StoreDatabase = await STORE_TARGETS[0]!.createDatabase();
    try {
      const first = await startTestGateway({
        target: STORE_TARGETS[0]!,
        database,
        configure: withRecorder(upstream) as never,
        env: { TOLLGATE_MASTER_KEY: oldKey },
      });
      const accountId = await first.createAccount(5);
      const manager = (await first.createKey(accountId, { management: true })).key;
      const key = (await first.createKey(accountId)).key;
      await call(first, 'POST', '/byok', manager, { provider: 'rec', key: OWN_KEY });
      await first.close();

      const rotated = await startTestGateway({
        target: STORE_TARGETS[0]!,
        database,
        configure: withRecorder(upstream) as never,
        env: { TOLLGATE_MASTER_KEY: newKey, TOLLGATE_MASTER_KEY_PREVIOUS: oldKey },
      });
      upstream.seenKeys.length = 0;
      expect((await chat(rotated, key, { model: 'test/rec', messages: [{ role: 'user', content: 'x' }] })).status).toBe(
        200,
      );
      expect(upstream.seenKeys).toEqual([OWN_KEY]);
      const rewrap = await rotated.admin('POST', '/byok/rewrap');
      expect(rewrap.json.data.reencrypted).toBe(1);
      expect((await rotated.admin('POST', '/byok/rewrap')).json.data.reencrypted).toBe(0);
      await rotated.close();

      const onlyNew = await startTestGateway({
        target: STORE_TARGETS[0]!,
        database,
        configure: withRecorder(upstream) as never,
        env: { TOLLGATE_MASTER_KEY: newKey },
      });
      upstream.seenKeys.length = 0;
      expect((await chat(onlyNew, key, { model: 'test/rec', messages: [{ role: 'user', content: 'x' }] })).status).toBe(
        200,
      );
      expect(upstream.seenKeys).toEqual([OWN_KEY]);
      await onlyNew.close();
    } finally {
      await database.cleanup();
      await upstream.close();
    }
  });
});
