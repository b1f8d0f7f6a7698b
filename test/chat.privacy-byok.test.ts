/**
 * `provider.zdr: true` / `data_collection: deny` filter endpoints on the data policy the operator
 * declares for its provider — a declaration about the operator's own account with it. An attempt with
 * the caller's own key (BYOK) runs under the caller's account, which nobody declared: under either
 * preference the own keys are not used, and an endpoint whose own key is required (`is_required`)
 * is left out. Regression: the BYOK attempts inherited the operator's declaration, and a request
 * demanding zero data retention was served with the caller's own key.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('zdr / data_collection preferences and the caller’s own keys', () => {
  let gw: TestGateway;
  let key: string;
  let manager: string;
  let byokId: string;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        for (const provider of file.providers) {
          // The operator's own account with both providers has a ZDR agreement.
          provider.zdr = true;
          if (provider.id === 'mock') provider.byok = true;
        }
      },
      env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
    });
    const accountId = await gw.createAccount(10);
    manager = (await gw.createKey(accountId, { management: true })).key;
    const byok = await request(`${gw.api}/byok`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'mock', key: 'sk-own-provider-key-1234567890' }),
    });
    expect(byok.statusCode).toBe(201);
    const created = (await byok.body.json()) as { data: { id: string; declared_zdr: unknown } };
    expect(created.data.declared_zdr).toBeNull(); // nobody declared anything about this key
    byokId = created.data.id;
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(() => gw.close());

  it('without a preference the own key serves (BYOK first)', async () => {
    const r = await chat(gw, key, { model: 'test/chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.is_byok).toBe(true);
  });

  it('zdr: true is not served with the caller’s own key (its retention is undeclared)', async () => {
    const r = await chat(gw, key, {
      model: 'test/chat',
      max_tokens: 2,
      provider: { zdr: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.is_byok).toBe(false);
  });

  it('an own key that is required leaves the endpoint out, and the 404 says why', async () => {
    const patch = await request(`${gw.api}/byok/${byokId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ is_required: true }),
    });
    expect(patch.statusCode).toBe(200);
    await patch.body.dump();
    const r = await chat(gw, key, {
      model: 'test/chat',
      max_tokens: 2,
      provider: { zdr: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status, r.text).toBe(404);
    expect(r.json.error.metadata.reasons).toEqual([
      'provider.zdr excludes your own key for mock (its data policy is not declared), which is required',
    ]);
  });
});
