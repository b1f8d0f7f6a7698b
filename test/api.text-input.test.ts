/**
 * A string the store would not keep as sent is refused (400 naming the field), on the embedded store
 * as on PostgreSQL: an unpaired surrogate was stored as U+FFFD, so two different credit references
 * were one and the second purchase was taken for a replay of the first (never credited); a NUL cut a
 * key name or a reference short when read back. And a JSON `null` body is not an empty object, a
 * text/plain body is not JSON, and valid JSON with a prototype key is told as such (it was "not valid
 * JSON").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('text the store would change', () => {
  let gw: TestGateway;
  let accountId: string;
  let keyHash: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    accountId = await gw.createAccount(0);
    keyHash = (await gw.createKey(accountId)).hash;
  });
  afterAll(() => gw?.close());

  /** The raw JSON text, so the escapes reach the gateway as written. */
  const admin = (method: 'POST' | 'PATCH', path: string, raw: string) =>
    call(gw, method, `/admin${path}`, {
      raw,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    });

  it('credit references differing only in an unpaired surrogate are refused, not merged', async () => {
    const first = await admin(
      'POST',
      `/accounts/${accountId}/credits`,
      '{"amount":1,"kind":"purchase","reference":"ref\\udc00"}',
    );
    expect(first.status, first.text).toBe(400);
    expect(first.json.error.message).toContain('reference');
    const nul = await admin(
      'POST',
      `/accounts/${accountId}/credits`,
      '{"amount":1,"kind":"purchase","reference":"inv-42\\u0000-b"}',
    );
    expect(nul.status, nul.text).toBe(400);
    expect(nul.json.error.message).toContain('NUL');
    // A well-formed pair (an emoji) is text like any other.
    const emoji = await admin(
      'POST',
      `/accounts/${accountId}/credits`,
      '{"amount":1,"kind":"purchase","reference":"ref-\\ud83d\\ude00"}',
    );
    expect(emoji.status, emoji.text).toBe(201);
    const account = await gw.admin('GET', `/accounts/${accountId}`);
    expect(account.json.data.total_credits).toBe(1);
  });

  it('a key name with a NUL or an unpaired surrogate is refused, the key unchanged', async () => {
    for (const name of ['a\\u0000b', 'a\\ud800b']) {
      const r = await admin('PATCH', `/keys/${keyHash}`, `{"name":"${name}"}`);
      expect(r.status, r.text).toBe(400);
      expect(r.json.error.message).toContain('name');
    }
  });

  it('a query parameter the route ignores is not read, NUL or not (a tracking parameter on a link)', async () => {
    const models = await call(gw, 'GET', '/models?utm_source=a%00b');
    expect(models.status, models.text).toBe(200);
    // A route whose query schema keeps unknown keys reads only the ones it declares (outside re-check).
    const { key } = await gw.createKey(accountId);
    const generation = await call(gw, 'GET', '/generation?id=gen-none&utm_source=a%00b', { key });
    expect(generation.status, generation.text).toBe(404);
    // One it reads still is.
    const read = await call(gw, 'GET', '/models?supported_parameters=to%00ols');
    expect(read.status, read.text).toBe(400);
    expect(read.json.error.message).toContain('supported_parameters');
  });

  it('a JSON null body is a 400, not an empty patch', async () => {
    const r = await admin('PATCH', `/keys/${keyHash}`, 'null');
    expect(r.status, r.text).toBe(400);
  });

  it('a text/plain body is refused as not JSON; a prototype key is named as such', async () => {
    const plain = await call(gw, 'PATCH', `/admin/keys/${keyHash}`, {
      raw: '{"name":"x"}',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
    });
    expect(plain.status, plain.text).toBe(400);
    expect(plain.json.error.message).toBe('Content-Type must be application/json');
    const poisoned = await admin('PATCH', `/keys/${keyHash}`, '{"name":"x","__proto__":{"admin":true}}');
    expect(poisoned.status, poisoned.text).toBe(400);
    expect(poisoned.json.error.message).toContain('forbidden key');
  });
});
