/** docs/api.md admin API, behind TOLLGATE_ADMIN_TOKEN. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectFields, HELLO, type Method } from './helpers/api.js';
import { ADMIN_TOKEN, chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const ACCOUNT_FIELDS = {
  id: 'string',
  email: 'string',
  created_at: 'string',
  total_credits: 'number',
  total_purchased: 'number',
  total_usage: 'number',
  balance: 'number',
  is_free_tier: 'boolean',
} as const;

let emailCounter = 0;
const uniqueEmail = () => `admin-test-${process.pid}-${Date.now()}-${++emailCounter}@example.test`;

describe.each(STORE_TARGETS)('admin API ($name)', (target) => {
  let gw: TestGateway;

  const adminAs = (token: string | null, method: Method, path: string, json?: unknown) =>
    call(gw, method, `/admin${path}`, {
      ...(token === null ? {} : { headers: { authorization: `Bearer ${token}` } }),
      ...(json === undefined ? {} : { json }),
    });
  const admin = (method: Method, path: string, json?: unknown) => adminAs(ADMIN_TOKEN, method, path, json);

  beforeAll(async () => {
    gw = await startTestGateway({ target });
  });
  afterAll(() => gw.close());

  it('refuses a missing or wrong admin token with 401 on every route', async () => {
    const accountId = await gw.createAccount(1);
    const { hash } = await gw.createKey(accountId);
    const routes: [Method, string, unknown?][] = [
      ['POST', '/accounts', { email: uniqueEmail() }],
      ['GET', `/accounts/${accountId}`],
      ['POST', `/accounts/${accountId}/credits`, { amount: 5, kind: 'grant' }],
      ['POST', `/accounts/${accountId}/keys`, { name: 'x' }],
      ['POST', `/keys/${hash}/compromised`, {}],
      ['PATCH', `/keys/${hash}`, { disabled: true }],
      ['DELETE', `/keys/${hash}`],
    ];
    const { key: inferenceKey } = await gw.createKey(accountId);
    const { key: managementKey } = await gw.createKey(accountId, { management: true });
    for (const [method, path, body] of routes) {
      for (const token of [
        null,
        'wrong-token',
        `${ADMIN_TOKEN}x`,
        ADMIN_TOKEN.slice(0, -1),
        inferenceKey,
        managementKey,
      ]) {
        expectError(await adminAs(token, method, path, body), 401);
      }
      expectError(
        await call(gw, method, `/admin${path}`, {
          headers: { authorization: ADMIN_TOKEN },
          ...(body === undefined ? {} : { json: body }),
        }),
        401,
      );
    }
    // Nothing changed.
    const account = await admin('GET', `/accounts/${accountId}`);
    expect(account.json.data.total_credits).toBe(1);
    expect((await call(gw, 'GET', '/key', { key: inferenceKey })).status).toBe(200);
  });

  it('POST /admin/accounts → 201 with every Account field', async () => {
    const email = uniqueEmail();
    const created = await admin('POST', '/accounts', { email, password: 'correct horse battery' });
    expect(created.status).toBe(201);
    expect(String(created.headers['content-type'])).toMatch(/^application\/json/);
    expect(Object.keys(created.json)).toEqual(['data']);
    const account = created.json.data;
    expectFields(account, ACCOUNT_FIELDS);
    expect(account).toMatchObject({
      email,
      total_credits: 0,
      total_purchased: 0,
      total_usage: 0,
      balance: 0,
      is_free_tier: true,
    });
    expect(Math.abs(Date.parse(account.created_at) - Date.now())).toBeLessThan(60_000);
    expect(created.text).not.toContain('correct horse');
    expect(created.text).not.toMatch(/scrypt|password/i);

    const read = await admin('GET', `/accounts/${account.id}`);
    expect(read.status).toBe(200);
    expect(read.json.data).toEqual(account);
  });

  it('e-mails are unique (case-insensitive) → 409; a bad e-mail, or one past SMTP limits → 400', async () => {
    const email = uniqueEmail();
    expect((await admin('POST', '/accounts', { email })).status).toBe(201);
    expectError(await admin('POST', '/accounts', { email }), 409);
    expectError(await admin('POST', '/accounts', { email: email.toUpperCase() }), 409);
    for (const body of [
      { email: 'not-an-email' },
      { email: '' },
      {},
      { email: 42 },
      { email: uniqueEmail(), password: 'short' },
      { email: uniqueEmail(), extra: true },
      // Past SMTP's limits (RFC 5321 §4.5.3.1): no mail could reach it, a reset link least of all.
      { email: `${'a'.repeat(65)}@example.test` },
      { email: `a@${'b'.repeat(250)}.test` },
    ]) {
      expectError(await admin('POST', '/accounts', body), 400);
    }
    const atTheLimit = `${Date.now()}-${process.pid}-${'a'.repeat(64)}`.slice(0, 64);
    expect((await admin('POST', '/accounts', { email: `${atTheLimit}@example.test` })).status).toBe(201);
    expectError(
      await call(gw, 'POST', '/admin/accounts', {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        raw: '{"email":',
      }),
      400,
    );
  });

  it('credits: purchase, grant and adjustment add up; only an adjustment may be negative', async () => {
    const id = (await admin('POST', '/accounts', { email: uniqueEmail() })).json.data.id as string;
    const grant = await admin('POST', `/accounts/${id}/credits`, { amount: 2, kind: 'grant' });
    expect(grant.status).toBe(201);
    expectFields(grant.json.data, ACCOUNT_FIELDS);
    expect(grant.json.data).toMatchObject({ total_credits: 2, total_purchased: 0, balance: 2, is_free_tier: true });
    const purchase = await admin('POST', `/accounts/${id}/credits`, { amount: 10.5, kind: 'purchase' });
    expect(purchase.status).toBe(201);
    expect(purchase.json.data).toMatchObject({
      total_credits: 12.5,
      total_purchased: 10.5,
      balance: 12.5,
      is_free_tier: false,
    });
    const adjustment = await admin('POST', `/accounts/${id}/credits`, { amount: -0.5, kind: 'adjustment' });
    expect(adjustment.status).toBe(201);
    expect(adjustment.json.data).toMatchObject({ total_credits: 12, total_purchased: 10.5, balance: 12 });
    const positive = await admin('POST', `/accounts/${id}/credits`, { amount: 0.25, kind: 'adjustment' });
    expect(positive.json.data.total_credits).toBe(12.25);

    const bad: unknown[] = [
      { amount: -1, kind: 'grant' },
      { amount: -1, kind: 'purchase' },
      { amount: 0, kind: 'grant' },
      { amount: 0, kind: 'adjustment' },
      { amount: 1, kind: 'gift' },
      { amount: 1 },
      { kind: 'grant' },
      { amount: '5', kind: 'grant' },
      { amount: 0.0000000001, kind: 'grant' },
      { amount: 1, kind: 'grant', reference: '' },
      { amount: 1, kind: 'grant', note: 'x' },
    ];
    for (const body of bad) expectError(await admin('POST', `/accounts/${id}/credits`, body), 400);
    const after = await admin('GET', `/accounts/${id}`);
    expect(after.json.data).toMatchObject({ total_credits: 12.25, total_purchased: 10.5, balance: 12.25 });
  });

  it('credits are idempotent on reference: a replay answers 200 and changes nothing', async () => {
    const id = (await admin('POST', '/accounts', { email: uniqueEmail() })).json.data.id as string;
    const first = await admin('POST', `/accounts/${id}/credits`, { amount: 5, kind: 'purchase', reference: 'order-1' });
    expect(first.status).toBe(201);
    expect(first.json.data.balance).toBe(5);
    const replay = await admin('POST', `/accounts/${id}/credits`, {
      amount: 5,
      kind: 'purchase',
      reference: 'order-1',
    });
    expect(replay.status).toBe(200);
    expectFields(replay.json.data, ACCOUNT_FIELDS);
    expect(replay.json.data).toMatchObject({ balance: 5, total_credits: 5, total_purchased: 5 });
    // The reference again for another amount or kind is not a replay: 409, nothing changed.
    for (const body of [
      { amount: 7, kind: 'purchase', reference: 'order-1' },
      { amount: 5, kind: 'grant', reference: 'order-1' },
    ]) {
      const conflict = await admin('POST', `/accounts/${id}/credits`, body);
      expectError(conflict, 409);
      expect(conflict.json.error.message).toContain('order-1');
      expect(conflict.json.error.message).toContain('purchase, 5 USD');
    }
    expect((await admin('GET', `/accounts/${id}`)).json.data).toMatchObject({ balance: 5, total_credits: 5 });
    const other = await admin('POST', `/accounts/${id}/credits`, { amount: 5, kind: 'purchase', reference: 'order-2' });
    expect(other.status).toBe(201);
    expect(other.json.data.balance).toBe(10);
    // Without a reference every call counts.
    expect((await admin('POST', `/accounts/${id}/credits`, { amount: 1, kind: 'grant' })).status).toBe(201);
    expect((await admin('POST', `/accounts/${id}/credits`, { amount: 1, kind: 'grant' })).status).toBe(201);
    expect((await admin('GET', `/accounts/${id}`)).json.data.balance).toBe(12);
    // References are per account.
    const second = (await admin('POST', '/accounts', { email: uniqueEmail() })).json.data.id as string;
    expect(
      (await admin('POST', `/accounts/${second}/credits`, { amount: 5, kind: 'purchase', reference: 'order-1' }))
        .status,
    ).toBe(201);
  });

  it('an unknown account → 404', async () => {
    expectError(await admin('GET', '/accounts/acct_doesnotexist'), 404);
    expectError(await admin('POST', '/accounts/acct_doesnotexist/credits', { amount: 5, kind: 'grant' }), 404);
    expectError(await admin('POST', '/accounts/acct_doesnotexist/keys', { name: 'x' }), 404);
    expectError(await admin('GET', `/accounts/${'x'.repeat(300)}`), 404);
  });

  it('POST /admin/accounts/:id/keys → 201 with an inference or management key', async () => {
    const id = await gw.createAccount(1);
    const inference = await admin('POST', `/accounts/${id}/keys`, { name: 'ops key', limit: 1 });
    expect(inference.status).toBe(201);
    expect(inference.json.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(inference.json.data).toMatchObject({ name: 'ops key', limit: 1, disabled: false });
    expect((await call(gw, 'GET', '/key', { key: inference.json.key })).json.data.is_management_key).toBe(false);
    const management = await admin('POST', `/accounts/${id}/keys`, { name: 'mgmt', management: true });
    expect(management.status).toBe(201);
    expect((await call(gw, 'GET', '/keys', { key: management.json.key })).status).toBe(200);
    expectError(await admin('POST', `/accounts/${id}/keys`, { name: '' }), 400);
    expectError(await admin('POST', `/accounts/${id}/keys`, { name: 'x', management: 'yes' }), 400);
  });

  it('POST /admin/keys/:hash/compromised disables the key (then 401 on use)', async () => {
    const id = await gw.createAccount(5);
    const { key, hash } = await gw.createKey(id);
    expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    const marked = await admin('POST', `/keys/${hash}/compromised`, { reason: 'found in a public repository' });
    expect(marked.status).toBe(200);
    expect(Object.keys(marked.json)).toEqual(['data']);
    // Said as the listing says it: compromised, not only disabled (operator's outside check).
    expect(marked.json.data).toMatchObject({ hash, disabled: true, compromised: true, app: null });
    // With the key's real usage (it was all zeros).
    expect(marked.json.data.usage).toBeGreaterThan(0);
    expect(marked.text).not.toContain(key.slice(9));
    expectError(await chat(gw, key, { model: 'test/chat', messages: HELLO }), 401);
    expectError(await call(gw, 'GET', '/key', { key }), 401);
    // The operator's listing says so, as the holder's does (it showed a disabled key, no more).
    const listed = await admin('GET', `/accounts/${id}/keys?include_disabled=true`);
    expect(listed.json.data.find((k: { hash: string }) => k.hash === hash)).toMatchObject({
      compromised: true,
      app: null,
    });
    // Without a body as well; an unknown hash is a 404.
    const second = await gw.createKey(id);
    expect(
      (
        await call(gw, 'POST', `/admin/keys/${second.hash}/compromised`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).status,
    ).toBe(200);
    expectError(await call(gw, 'GET', '/key', { key: second.key }), 401);
    expectError(await admin('POST', `/keys/${'0'.repeat(64)}/compromised`, {}), 404);
    expectError(await admin('POST', `/keys/${hash}/compromised`, { reason: 42 }), 400);
  });

  it('PATCH and DELETE /admin/keys/:hash', async () => {
    const id = await gw.createAccount(1);
    const { key, hash } = await gw.createKey(id);
    const patched = await admin('PATCH', `/keys/${hash}`, { name: 'renamed', limit: 4 });
    expect(patched.status).toBe(200);
    expect(patched.json.data).toMatchObject({
      hash,
      name: 'renamed',
      limit: 4,
      limit_remaining: 4,
      compromised: false,
      app: null,
    });
    expectError(await admin('PATCH', `/keys/${hash}`, { bogus: 1 }), 400);
    expectError(await admin('PATCH', `/keys/${'0'.repeat(64)}`, { name: 'x' }), 404);
    expectError(await admin('PATCH', '/keys/nothex', { name: 'x' }), 404);
    const deleted = await admin('DELETE', `/keys/${hash}`);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ deleted: true });
    expectError(await admin('DELETE', `/keys/${hash}`), 404);
    expectError(await call(gw, 'GET', '/key', { key }), 401);
  });
});
