/**
 * `user` (an end-user id, forwarded upstream and stored with the generation) is bounded like every
 * stored value a caller chooses: a longer one is a 400 naming `user`, with nothing forwarded or
 * charged — one request could otherwise make the gateway store megabytes per generation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from './helpers/api.js';
import { balanceUnits, chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { postgresTarget } from './helpers/store-targets.js';

describe('the `user` field', () => {
  let gw: TestGateway;
  let account: string;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: postgresTarget });
    account = await gw.createAccount(5);
    key = (await gw.createKey(account)).key;
  });
  afterAll(() => gw?.close());

  it('a 200,000-character user is refused with 400, nothing forwarded or charged; 1,000 characters are served', async () => {
    const balance = await balanceUnits(gw, account);
    const upstream = gw.provider.stats.requests;
    const messages = [{ role: 'user', content: 'hi' }];
    const refused = await chat(gw, key, { model: 'test/chat', messages, user: 'u'.repeat(200_000) });
    expect(expectError(refused, 400).message).toMatch(/user/);
    expect(gw.provider.stats.requests, 'forwarded upstream').toBe(upstream);
    expect(await balanceUnits(gw, account), 'charged').toBe(balance);

    const served = await chat(gw, key, { model: 'test/chat', messages, user: 'u'.repeat(1000) });
    expect(served.status).toBe(200);
    const generation = await getJson(gw, `/generation?id=${served.json.id}`, key);
    expect(generation.json.data.external_user).toBe('u'.repeat(1000));
  });
});
