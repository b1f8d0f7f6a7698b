/**
 * The OAuth endpoints take `expires_at` for the key an app receives as strictly as `POST /keys` does
 * (README "Dates are strict"): an impossible calendar date such as `2031-02-30T00:00:00Z`, which
 * `Date.parse` would roll over to 2 March, or an offset instead of `Z`, is a 400 naming expires_at,
 * and no code is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, createHolder, signIn } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

const IMPOSSIBLE = '2031-02-30T00:00:00Z';

describe('OAuth expires_at', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  const codeCount = async () =>
    Number((await gw.database.openDriver().all('SELECT COUNT(*) AS n FROM oauth_codes'))[0]!.n);

  it('POST /keys refuses February 30th; POST /auth/keys/code and the approval endpoint must too (400, no code stored)', async () => {
    const holder = await createHolder(gw);
    const management = (await gw.createKey(holder.id, { management: true })).key;
    expectError(
      await call(gw, 'POST', '/keys', { key: management, json: { name: 'k', expires_at: IMPOSSIBLE } }),
      400,
      /expires_at/,
    );

    const before = await codeCount();
    expectError(
      await call(gw, 'POST', '/auth/keys/code', {
        key: management,
        json: { callback_url: 'https://app.example/cb', expires_at: IMPOSSIBLE },
      }),
      400,
      /expires_at/,
    );

    const session = await signIn(gw, holder.email, holder.password);
    expectError(
      await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: { callback_url: 'https://app.example/cb', expires_at: IMPOSSIBLE, decision: 'approve' },
      }),
      400,
      /expires_at/,
    );
    expect(await codeCount()).toBe(before);
  });
});
