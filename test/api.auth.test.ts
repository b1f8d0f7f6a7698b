/** docs/api.md authentication: every way a bearer key can be wrong is a 401 error record. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../src/auth/key-format.js';
import { call, expectError, HELLO, sleep } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

/** Change one hex digit of the key body (not the checksum), so the CRC-32 no longer matches. */
function breakChecksum(key: string): string {
  const at = 20;
  const replacement = key[at] === 'a' ? 'b' : 'a';
  return key.slice(0, at) + replacement + key.slice(at + 1);
}

describe.each(STORE_TARGETS)('auth ($name)', (target) => {
  let gw: TestGateway;
  let accountId: string;
  let key: string;
  let management: string;
  let expiring: { key: string; expiresAt: number };

  const getKey = (authorization?: string) =>
    call(gw, 'GET', '/key', authorization === undefined ? {} : { headers: { authorization } });
  const chatWith = (k: string) => chat(gw, k, { model: 'test/chat', messages: HELLO });

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
    management = (await gw.createKey(accountId, { management: true })).key;
    const expiresAt = Date.now() + 2000;
    expiring = {
      key: (await gw.createKey(accountId, { expires_at: new Date(expiresAt).toISOString() })).key,
      expiresAt,
    };
  });
  afterAll(() => gw.close());

  it('accepts a valid inference key', async () => {
    const info = await getKey(`Bearer ${key}`);
    expect(info.status).toBe(200);
    const completion = await chatWith(key);
    expect(completion.status).toBe(200);
    // A key with an expiry works (and is now cached by the authenticator) until the expiry passes.
    expect((await chatWith(expiring.key)).status).toBe(200);
  });

  it('refuses a missing Authorization header', async () => {
    expectError(await getKey(), 401);
    const response = await call(gw, 'POST', '/chat/completions', { json: { model: 'test/chat', messages: HELLO } });
    expectError(response, 401);
    expect(response.headers['x-generation-id']).toMatch(/^gen-/);
  });

  it('refuses a non-Bearer scheme', async () => {
    expectError(await getKey(`Basic ${Buffer.from(`user:${key}`).toString('base64')}`), 401);
    expectError(await getKey(key), 401);
    expectError(await getKey(`Token ${key}`), 401);
    expectError(await getKey('Bearer'), 401);
  });

  it('refuses malformed keys offline', async () => {
    for (const bad of [
      'sk-tg-v1-abc',
      'sk-or-v1-' + key.slice(9),
      key.toUpperCase(),
      `${key}0`,
      key.slice(0, -1),
      'hello',
      `sk-tg-v1-${'0'.repeat(64)}`,
    ]) {
      expectError(await getKey(`Bearer ${bad}`), 401);
    }
  });

  it('refuses a key with one hex digit changed (bad checksum)', async () => {
    const typo = breakChecksum(key);
    expect(typo).not.toBe(key);
    expect(typo).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expectError(await getKey(`Bearer ${typo}`), 401);
    expectError(await chatWith(typo), 401);
  });

  it('refuses an unknown well-formed key', async () => {
    const unknown = generateKey();
    expectError(await getKey(`Bearer ${unknown}`), 401);
    const response = await chatWith(unknown);
    expectError(response, 401);
    expect(response.headers['x-generation-id']).toMatch(/^gen-/);
  });

  it('refuses a key disabled by the operator, and accepts it again once re-enabled', async () => {
    const victim = await gw.createKey(accountId);
    expect((await chatWith(victim.key)).status).toBe(200);
    const disabled = await gw.admin('PATCH', `/keys/${victim.hash}`, { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.json.data.disabled).toBe(true);
    expectError(await chatWith(victim.key), 401);
    expectError(await getKey(`Bearer ${victim.key}`), 401);

    const enabled = await gw.admin('PATCH', `/keys/${victim.hash}`, { disabled: false });
    expect(enabled.status).toBe(200);
    expect(enabled.json.data.disabled).toBe(false);
    expect((await chatWith(victim.key)).status).toBe(200);
    expect((await getKey(`Bearer ${victim.key}`)).status).toBe(200);
  });

  it('refuses a deleted key', async () => {
    const victim = await gw.createKey(accountId);
    expect((await getKey(`Bearer ${victim.key}`)).status).toBe(200);
    const deleted = await gw.admin('DELETE', `/keys/${victim.hash}`);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ deleted: true });
    expectError(await getKey(`Bearer ${victim.key}`), 401);
    expectError(await chatWith(victim.key), 401);
  });

  it('refuses a management key on the inference route', async () => {
    const response = await chatWith(management);
    expectError(response, 401);
    expect(response.headers['x-generation-id']).toMatch(/^gen-/);
  });

  it('refuses an inference key on management routes', async () => {
    expectError(await call(gw, 'GET', '/keys', { key }), 401);
    expectError(await call(gw, 'POST', '/keys', { key, json: { name: 'x' } }), 401);
  });

  it('accepts a management key on GET /key and GET /credits', async () => {
    const info = await call(gw, 'GET', '/key', { key: management });
    expect(info.status).toBe(200);
    expect(info.json.data.is_management_key).toBe(true);
    const credits = await call(gw, 'GET', '/credits', { key: management });
    expect(credits.status).toBe(200);
    expect(credits.json.data.total_credits).toBe(10);
  });

  it('forgets a cached key the moment it is disabled or deleted through the API', async () => {
    const created = await call(gw, 'POST', '/keys', { key: management, json: { name: 'cached' } });
    expect(created.status).toBe(201);
    const { key: cached } = created.json as { key: string };
    const hash = created.json.data.hash as string;
    // Used (and so cached by the authenticator) right before the change.
    expect((await chatWith(cached)).status).toBe(200);
    const patched = await call(gw, 'PATCH', `/keys/${hash}`, { key: management, json: { disabled: true } });
    expect(patched.status).toBe(200);
    expectError(await chatWith(cached), 401);

    const reenabled = await call(gw, 'PATCH', `/keys/${hash}`, { key: management, json: { disabled: false } });
    expect(reenabled.status).toBe(200);
    expect((await chatWith(cached)).status).toBe(200);
    const deleted = await call(gw, 'DELETE', `/keys/${hash}`, { key: management });
    expect(deleted.status).toBe(200);
    expectError(await chatWith(cached), 401);
  });

  it('forgets a cached key the moment the operator marks it compromised', async () => {
    const victim = await gw.createKey(accountId);
    expect((await chatWith(victim.key)).status).toBe(200);
    const marked = await gw.admin('POST', `/keys/${victim.hash}/compromised`, { reason: 'test' });
    expect(marked.status).toBe(200);
    expectError(await chatWith(victim.key), 401);
  });

  // Last, so the wait overlaps with the tests above.
  it('refuses an expired key, even one used (and cached) while valid', async () => {
    const wait = expiring.expiresAt - Date.now() + 50;
    if (wait > 0) await sleep(wait);
    expectError(await getKey(`Bearer ${expiring.key}`), 401);
    expectError(await chatWith(expiring.key), 401);
  });
});
