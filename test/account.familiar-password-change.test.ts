/**
 * The password change takes the sign-in budgets too (a stolen session must not become a password
 * oracle), with the same exception: while someone guessing from other addresses has spent the
 * account-wide budget, the holder signed in at a familiar address can still change the password —
 * the one thing they would do about it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, createHolder, signIn } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

const attempt = (gw: TestGateway, email: string, password: string, from: string) =>
  call(gw, 'POST', '/session', { json: { email, password }, headers: { 'x-forwarded-for': from } });

describe('a familiar address and the password change', { timeout: 180_000 }, () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
      },
    });
  });
  afterAll(() => gw.close());

  it('the holder signed in at a familiar address can change the password while the account-wide budget is spent', async () => {
    const holder = await createHolder(gw);
    const home = '192.0.2.50';
    const headers = { 'x-forwarded-for': home };
    await signIn(gw, holder.email, holder.password, headers);
    for (let source = 1; source <= 4; source++)
      for (let i = 0; i < 5; i++)
        expectError(await attempt(gw, holder.email, 'wrong password!', `203.0.113.${source}`), 401);
    // Sign-in from home still works (the commit's point)...
    const session = await signIn(gw, holder.email, holder.password, headers);
    // ...and so should changing the password from that very session, at that very address.
    const changed = await asBrowser(gw, session, 'POST', '/account/password', {
      json: { current_password: holder.password, new_password: 'a brand new password' },
      headers,
    });
    expect(changed.status, changed.text).toBe(200);
  });
});
