/** docs/api.md key management with a management key. */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectFields, expectNoLeak, HELLO, sleep, units } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const API_KEY_FIELDS = {
  hash: 'string',
  name: 'string',
  label: 'string',
  disabled: 'boolean',
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
  created_at: 'string',
  updated_at: 'string|null',
  creator_user_id: 'string|null',
  external_user: 'string|null',
  workspace_id: 'string',
} as const;

function expectApiKey(data: Record<string, unknown>): void {
  expectFields(data, API_KEY_FIELDS);
  expect(data.hash).toMatch(/^[0-9a-f]{64}$/);
  expect(data.label).toMatch(/^sk-tg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/);
  expect(Number.isNaN(Date.parse(data.created_at as string))).toBe(false);
  if ('expires_at' in data && data.expires_at !== null)
    expect(Number.isNaN(Date.parse(data.expires_at as string))).toBe(false);
  if (data.limit_reset !== null) expect(['daily', 'weekly', 'monthly']).toContain(data.limit_reset);
}

function isNewestFirst(keys: { created_at: string }[]): boolean {
  return keys.every((k, i) => i === 0 || Date.parse(keys[i - 1]!.created_at) >= Date.parse(k.created_at));
}

describe.each(STORE_TARGETS)('key management ($name)', (target) => {
  let gw: TestGateway;
  let accountId: string;
  let management: string;
  let otherManagement: string;
  let otherHash: string;

  const keys = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, json?: unknown, key = management) =>
    call(gw, method, `/keys${path}`, json === undefined ? { key } : { key, json });

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    accountId = await gw.createAccount(10);
    management = (await gw.createKey(accountId, { management: true })).key;
    const otherAccount = await gw.createAccount(10);
    otherManagement = (await gw.createKey(otherAccount, { management: true })).key;
    otherHash = (await gw.createKey(otherAccount)).hash;
  });
  afterAll(() => gw.close());

  it('POST /keys creates an inference key: 201, the plaintext once, every ApiKey field', async () => {
    const created = await keys('POST', '', { name: 'first' });
    expect(created.status).toBe(201);
    expect(String(created.headers['content-type'])).toMatch(/^application\/json/);
    expect(Object.keys(created.json).sort()).toEqual(['data', 'key']);
    const { key, data } = created.json;
    expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expectApiKey(data);
    expect(data.hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(data.label).toBe(`sk-tg-v1-${key.slice(9, 12)}...${key.slice(-3)}`);
    expect(data).toMatchObject({
      name: 'first',
      disabled: false,
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      include_byok_in_limit: false,
      usage: 0,
      byok_usage: 0,
      workspace_id: 'default',
    });
    expect(data.updated_at).toBeNull();
    expect(data.external_user).toBeNull();
    expect(Math.abs(Date.parse(data.created_at) - Date.now())).toBeLessThan(60_000);
    // The new key is an inference key of the same account and works at once.
    expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    const info = await call(gw, 'GET', '/key', { key });
    expect(info.json.data.is_management_key).toBe(false);
  });

  it('POST /keys stores limit, limit_reset, include_byok_in_limit and expires_at', async () => {
    const expires = new Date(Date.now() + 86_400_000);
    const created = await keys('POST', '', {
      name: 'limited',
      limit: 2.5,
      limit_reset: 'weekly',
      include_byok_in_limit: true,
      expires_at: expires.toISOString(),
    });
    expect(created.status).toBe(201);
    const { data } = created.json;
    expectApiKey(data);
    expect(data).toMatchObject({
      name: 'limited',
      limit: 2.5,
      limit_remaining: 2.5,
      limit_reset: 'weekly',
      include_byok_in_limit: true,
    });
    expect(Date.parse(data.expires_at)).toBe(expires.getTime());

    const noFraction = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const second = await keys('POST', '', {
      name: 'no fraction',
      expires_at: noFraction,
      limit: null,
      limit_reset: null,
    });
    expect(second.status).toBe(201);
    expect(Date.parse(second.json.data.expires_at)).toBe(Date.parse(noFraction));
    expect(second.json.data.limit).toBeNull();
  });

  it('GET /keys lists newest first, GET /keys/:hash reads one, and the plaintext never comes back', async () => {
    const made: { key: string; hash: string }[] = [];
    for (const name of ['order-1', 'order-2', 'order-3']) {
      const created = await keys('POST', '', { name });
      expect(created.status).toBe(201);
      made.push({ key: created.json.key, hash: created.json.data.hash });
      await sleep(3);
    }
    const list = await keys('GET', '');
    expect(list.status).toBe(200);
    expect(Object.keys(list.json)).toEqual(['data']);
    const data = list.json.data as Record<string, unknown>[];
    data.forEach(expectApiKey);
    expect(isNewestFirst(data as { created_at: string }[])).toBe(true);
    const positions = made.map((m) => data.findIndex((k) => k.hash === m.hash));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => b - a));
    // Only this account's keys.
    expect(data.some((k) => k.hash === otherHash)).toBe(false);

    const one = await keys('GET', `/${made[1]!.hash}`);
    expect(one.status).toBe(200);
    expect(Object.keys(one.json)).toEqual(['data']);
    expectApiKey(one.json.data);
    expect(one.json.data).toMatchObject({ hash: made[1]!.hash, name: 'order-2' });
    expect(one.json).not.toHaveProperty('key');

    for (const { key } of made) {
      expect(list.text).not.toContain(key.slice(9));
      expect(one.text).not.toContain(key.slice(9));
    }
    expectNoLeak(list.text);
  });

  it('GET /keys pages by 100 through offset', async () => {
    const pagedAccount = await gw.createAccount(1);
    const pagedManagement = await gw.createKey(pagedAccount, { management: true });
    const created = new Set<string>([pagedManagement.hash]);
    for (let batch = 0; batch < 105; batch += 15) {
      const results = await Promise.all(
        Array.from({ length: 15 }, (_, i) => keys('POST', '', { name: `page ${batch + i}` }, pagedManagement.key)),
      );
      for (const r of results) {
        expect(r.status).toBe(201);
        created.add(r.json.data.hash);
      }
    }
    expect(created.size).toBe(106);

    const first = await keys('GET', '', undefined, pagedManagement.key);
    const explicit = await keys('GET', '?offset=0', undefined, pagedManagement.key);
    const second = await keys('GET', '?offset=100', undefined, pagedManagement.key);
    const shifted = await keys('GET', '?offset=3', undefined, pagedManagement.key);
    const beyond = await keys('GET', '?offset=1000', undefined, pagedManagement.key);
    for (const r of [first, explicit, second, shifted, beyond]) expect(r.status).toBe(200);
    expect(first.json.data).toHaveLength(100);
    expect(explicit.json.data.map((k: { hash: string }) => k.hash)).toEqual(
      first.json.data.map((k: { hash: string }) => k.hash),
    );
    expect(second.json.data).toHaveLength(6);
    expect(beyond.json.data).toEqual([]);
    const all = [...first.json.data, ...second.json.data] as { hash: string; created_at: string }[];
    expect(new Set(all.map((k) => k.hash))).toEqual(created);
    expect(isNewestFirst(all)).toBe(true);
    expect(shifted.json.data.map((k: { hash: string }) => k.hash)).toEqual(all.slice(3, 103).map((k) => k.hash));
  });

  it('GET /keys hides disabled keys unless include_disabled=true', async () => {
    const created = await keys('POST', '', { name: 'to disable' });
    const hash = created.json.data.hash as string;
    const disabled = await keys('PATCH', `/${hash}`, { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.json.data.disabled).toBe(true);

    const hashes = (r: { json: { data: { hash: string }[] } }) => r.json.data.map((k) => k.hash);
    const byDefault = await keys('GET', '');
    const excluded = await keys('GET', '?include_disabled=false');
    const included = await keys('GET', '?include_disabled=true');
    expect(hashes(byDefault)).not.toContain(hash);
    expect(hashes(excluded)).not.toContain(hash);
    expect(hashes(included)).toContain(hash);
    expect(included.json.data.find((k: { hash: string }) => k.hash === hash).disabled).toBe(true);
    // A disabled key can still be read by hash.
    expect((await keys('GET', `/${hash}`)).json.data.disabled).toBe(true);
  });

  it('rejects bad list queries with 400', async () => {
    expectError(await keys('GET', '?offset=-1'), 400);
    expectError(await keys('GET', '?offset=abc'), 400);
    expectError(await keys('GET', '?offset=1.5'), 400);
    expectError(await keys('GET', '?include_disabled=yes'), 400);
  });

  it('PATCH /keys/:hash updates name, disabled, limit, limit_reset, include_byok_in_limit', async () => {
    const created = await keys('POST', '', { name: 'before' });
    const hash = created.json.data.hash as string;
    const patched = await keys('PATCH', `/${hash}`, {
      name: 'after',
      limit: 3,
      limit_reset: 'daily',
      include_byok_in_limit: true,
    });
    expect(patched.status).toBe(200);
    expect(Object.keys(patched.json)).toEqual(['data']);
    expectApiKey(patched.json.data);
    expect(patched.json.data).toMatchObject({
      hash,
      name: 'after',
      limit: 3,
      limit_remaining: 3,
      limit_reset: 'daily',
      include_byok_in_limit: true,
      disabled: false,
    });
    expect(patched.json.data.updated_at).not.toBeNull();
    expect(patched.json.data.created_at).toBe(created.json.data.created_at);
    expect(patched.text).not.toContain(created.json.key.slice(9));
    // Shown as it reads: a bidi override would make "after\u202Etxet" read as "aftertext" reversed.
    const renamed = await keys('PATCH', `/${hash}`, { name: ' after\u202e  txet\u202c\t\u200f ' });
    expect(renamed.json.data.name).toBe('after txet');
    await keys('PATCH', `/${hash}`, { name: 'after' });

    const cleared = await keys('PATCH', `/${hash}`, { limit: null, limit_reset: null });
    expect(cleared.status).toBe(200);
    expect(cleared.json.data).toMatchObject({ name: 'after', limit: null, limit_remaining: null, limit_reset: null });
    const read = await keys('GET', `/${hash}`);
    expect(read.json.data).toMatchObject({ name: 'after', limit: null, include_byok_in_limit: true });
  });

  it('DELETE /keys/:hash answers {deleted:true}, then the key is gone (404)', async () => {
    const created = await keys('POST', '', { name: 'doomed' });
    const hash = created.json.data.hash as string;
    const deleted = await keys('DELETE', `/${hash}`);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ deleted: true });
    expectError(await keys('GET', `/${hash}`), 404);
    expectError(await keys('PATCH', `/${hash}`, { name: 'x' }), 404);
    expectError(await keys('DELETE', `/${hash}`), 404);
    // A client that sends its JSON Content-Type on every request, with no body: still a delete.
    const another = (await keys('POST', '', { name: 'doomed too' })).json.data.hash as string;
    const withType = await call(gw, 'DELETE', `/keys/${another}`, {
      key: management,
      headers: { 'content-type': 'application/json', 'content-length': '0' },
    });
    expect(withType.status, withType.text).toBe(200);
    expect(withType.json).toEqual({ deleted: true });
    const listed = await keys('GET', '?include_disabled=true');
    expect(listed.json.data.some((k: { hash: string }) => k.hash === hash)).toBe(false);
    expectError(await call(gw, 'GET', '/key', { key: created.json.key }), 401);
  });

  it("another account's key is a 404, unchanged", async () => {
    expectError(await keys('GET', `/${otherHash}`), 404);
    expectError(await keys('PATCH', `/${otherHash}`, { disabled: true }), 404);
    expectError(await keys('DELETE', `/${otherHash}`), 404);
    const theirs = await keys('GET', `/${otherHash}`, undefined, otherManagement);
    expect(theirs.status).toBe(200);
    expect(theirs.json.data.disabled).toBe(false);
    expectError(await keys('GET', `/${'0'.repeat(64)}`), 404);
    expectError(await keys('GET', '/not-a-hash'), 404);
  });

  it('rejects bad creation bodies with 400 and creates nothing', async () => {
    const before = (await keys('GET', '?include_disabled=true')).json.data.length as number;
    const bad: unknown[] = [
      {},
      { name: '' },
      { name: '   ' },
      { name: 42 },
      { name: 'x', limit: -1 },
      { name: 'x', limit: 'ten' },
      { name: 'x', limit: 0.0000000001 },
      { name: 'x'.repeat(201) },
      { name: 'x', limit_reset: 'yearly' },
      { name: 'x', include_byok_in_limit: 'yes' },
      { name: 'x', expires_at: 'garbage' },
      { name: 'x', expires_at: '2020-01-01T00:00:00Z' },
      { name: 'x', expires_at: 12345 },
      { name: 'x', unknown_field: true },
    ];
    for (const body of bad) expectError(await keys('POST', '', body), 400);
    // A name only of invisible characters would show as no name (outside check: U+200B accepted).
    expect((await keys('POST', '', { name: '\u200b\u200b\u2066' })).json.error.message).toBe(
      'Invalid request: name must be a non-empty string',
    );
    // In words a dashboard can show as it is (outside check: zod's "Too big: expected string to have <=200 characters").
    expect((await keys('POST', '', { name: 'x'.repeat(201) })).json.error.message).toBe(
      'Invalid request: name: must be at most 200 characters',
    );
    expectError(
      await call(gw, 'POST', '/keys', {
        key: management,
        raw: '{"name":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    );
    expectError(
      await call(gw, 'POST', '/keys', { key: management, raw: '[]', headers: { 'content-type': 'application/json' } }),
      400,
    );
    const after = (await keys('GET', '?include_disabled=true')).json.data.length as number;
    expect(after).toBe(before);
  });

  it('rejects bad update bodies with 400 and changes nothing', async () => {
    const created = await keys('POST', '', { name: 'stable', limit: 1 });
    const hash = created.json.data.hash as string;
    for (const body of [
      { name: '' },
      { limit: -1 },
      { limit_reset: 'yearly' },
      { disabled: 'true' },
      { unknown_field: 1 },
      { expires_at: '2030-01-01T00:00:00Z', hash: 'x' },
    ]) {
      expectError(await keys('PATCH', `/${hash}`, body), 400);
    }
    const read = await keys('GET', `/${hash}`);
    expect(read.json.data).toMatchObject({ name: 'stable', limit: 1, limit_reset: null, disabled: false });
  });

  it('limit_remaining = limit − usage after a paid completion', async () => {
    const created = await keys('POST', '', { name: 'metered', limit: 1 });
    const { key } = created.json;
    const hash = created.json.data.hash as string;
    const completion = await chat(gw, key, { model: 'test/chat', messages: HELLO });
    expect(completion.status).toBe(200);
    const cost = completion.json.usage.cost as number;
    expect(cost).toBeGreaterThan(0);

    const read = await keys('GET', `/${hash}`);
    expect(units(read.json.data.usage)).toBe(units(cost));
    expect(units(read.json.data.usage_daily)).toBe(units(cost));
    expect(units(read.json.data.limit_remaining)).toBe(units(1) - units(cost));
    const info = await call(gw, 'GET', '/key', { key });
    expect(units(info.json.data.limit_remaining)).toBe(units(1) - units(cost));
    const listed = (await keys('GET', '')).json.data.find((k: { hash: string }) => k.hash === hash);
    expect(units(listed.limit_remaining)).toBe(units(1) - units(cost));
  });
});
