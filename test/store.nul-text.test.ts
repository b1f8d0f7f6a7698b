/**
 * PostgreSQL's text cannot hold a NUL character (SQLite's can). A caller's string with one is the
 * caller's input error: a generation id with one is a 400 naming it (as on SQLite), and a key
 * name with one is a 400 naming the reason — neither is a 500 that clients retry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { postgresTarget } from './helpers/store-targets.js';

describe('NUL characters in what callers send (PostgreSQL)', () => {
  let gw: TestGateway;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: postgresTarget });
    accountId = await gw.createAccount(5);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(() => gw?.close());

  const get = async (path: string) => {
    const r = await request(`${gw.api}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: r.statusCode, headers: r.headers as Record<string, string>, text: await r.body.text() };
  };

  it('GET /generation?id=gen-%00 → 400 error record naming the NUL (not a 500), and the route keeps working', async () => {
    const answer = await get('/generation?id=gen-%00abc');
    expect(answer.status, answer.text).toBeLessThan(500);
    expectError(answer, 400);
    expect(answer.text).toContain('NUL');
    // The control case: an ordinary unknown id is a 404.
    expectError(await get('/generation?id=gen-unknown'), 404);
  });

  it('a key name with a NUL → 400 error record, nothing created', async () => {
    const before = await gw.admin('GET', `/accounts/${accountId}/keys`);
    const created = await gw.admin('POST', `/accounts/${accountId}/keys`, { name: 'a\u0000b' });
    expect(created.status).toBe(400);
    expect(created.json.error.message).toContain('NUL');
    const after = await gw.admin('GET', `/accounts/${accountId}/keys`);
    expect(after.json.data).toHaveLength(before.json.data.length);
  });
});
