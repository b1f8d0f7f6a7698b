/**
 * Open sign-up is limited per client address (`accounts.sign_in_limits.per_address` per window): each
 * sign-up takes a slot for good, successful or not, so a script cannot mint accounts — or password
 * hashes — at the gateway's full rate. Past the budget: 429 with Retry-After, nothing created.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { uniqueEmail } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('open sign-up, per client address', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file, { accounts: { signup: 'open', sign_in_limits: { per_address: 3 } } }),
    });
  });
  afterAll(() => gw.close());

  it('takes three sign-ups from one address, then answers 429 with Retry-After and creates nothing', async () => {
    for (let i = 0; i < 3; i++) {
      const created = await call(gw, 'POST', '/signup', {
        json: { email: uniqueEmail('limit'), password: 'long enough password' },
      });
      expect(created.status, created.text).toBe(201);
    }
    const email = uniqueEmail('limit');
    const refused = await call(gw, 'POST', '/signup', { json: { email, password: 'long enough password' } });
    expectError(refused, 429, /Too many sign-up attempts/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // The account was not made: signing in with it fails as for any unknown address.
    expectError(await call(gw, 'POST', '/session', { json: { email, password: 'long enough password' } }), 401);
  });
});
