/**
 * Sign-in for account holders (docs/api.md, "The dashboard's session API"), through real HTTP on both
 * stores: cookie attributes, sign out (everywhere), CSRF, the session-or-management-key account API,
 * sign-up policy, password change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectFields } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, cookieOf, createHolder, signIn, uniqueEmail } from './helpers/session.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const INVALID = 'Invalid e-mail or password';

// Sign-ins run scrypt: generous time on a loaded machine.
describe.each(STORE_TARGETS)('sessions ($name)', { timeout: 120_000 }, (target) => {
  let gw: TestGateway;
  let holder: { id: string; email: string; password: string };

  beforeAll(async () => {
    // Plenty of sign-in attempts per address here: every test comes from 127.0.0.1 (the brute-force suite tests the limits).
    gw = await startTestGateway({
      target,
      configure: (file) =>
        Object.assign(file, {
          accounts: { sign_in_limits: { per_address: 1000, per_account: 1000, per_account_and_address: 1000 } },
        }),
    });
    holder = await createHolder(gw);
  });
  afterAll(() => gw.close());

  it('POST /session signs in: 200 with account, csrf_token, expires_at, and an HttpOnly SameSite=Lax cookie on Path=/ (not Secure over plain HTTP)', async () => {
    const result = await call(gw, 'POST', '/session', {
      json: { email: holder.email.toUpperCase(), password: holder.password },
    });
    expect(result.status, result.text).toBe(200);
    expect(result.json.data.account).toEqual({ id: holder.id, email: holder.email });
    expect(result.json.data.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expires = Date.parse(result.json.data.expires_at);
    // Rolling: the idle expiry (7 days) comes before the absolute one (30 days).
    expect(Math.abs(expires - (Date.now() + 7 * 86_400_000))).toBeLessThan(60_000);
    const setCookie = String(result.headers['set-cookie']);
    expect(setCookie).toMatch(/^tg_session=[A-Za-z0-9_-]{43}; /);
    const attributes = setCookie.split('; ').slice(1);
    expect(attributes).toContain('HttpOnly');
    expect(attributes).toContain('SameSite=Lax');
    expect(attributes).toContain('Path=/');
    expect(attributes).not.toContain('Secure');
    expect(attributes.find((a) => a.startsWith('Max-Age='))).toBe(`Max-Age=${30 * 86_400}`);
    expect(String(result.headers['cache-control'])).toBe('no-store');
    // Only the SHA-256 of the token is stored.
    const token = setCookie.split(';')[0]!.slice('tg_session='.length);
    const driver = gw.database.openDriver();
    const rows = await driver.all('SELECT token_hash FROM sessions WHERE account_id = ?', [holder.id]);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.token_hash).not.toBe(token);
    expect(rows.map((r) => r.token_hash)).toContain(
      (await import('node:crypto')).createHash('sha256').update(token).digest('hex'),
    );
  });

  it('GET /session answers the same shape with the cookie, 401 without or with a forged one', async () => {
    const session = await signIn(gw, holder.email, holder.password);
    const result = await asBrowser(gw, session, 'GET', '/session');
    expect(result.status).toBe(200);
    expect(result.json.data).toMatchObject({
      account: { id: holder.id, email: holder.email },
      csrf_token: session.csrf,
    });
    const signedOut = await call(gw, 'GET', '/session');
    expectError(signedOut, 401);
    expect(signedOut.headers['set-cookie']).toBeUndefined();
    const forged = await call(gw, 'GET', '/session', { headers: { cookie: 'tg_session=' + 'A'.repeat(43) } });
    expectError(forged, 401);
    expect(String(forged.headers['set-cookie'])).toMatch(/^tg_session=; Max-Age=0;/); // the browser drops a dead cookie
    expectError(await call(gw, 'GET', '/session', { headers: { cookie: 'tg_session=not-a-token' } }), 401);
  });

  it('GET /session/status answers 200 either way: the session as GET /session gives it, or data: null (a dead cookie dropped)', async () => {
    const session = await signIn(gw, holder.email, holder.password);
    const signedIn = await asBrowser(gw, session, 'GET', '/session/status');
    expect(signedIn.status).toBe(200);
    expect(signedIn.json).toEqual((await asBrowser(gw, session, 'GET', '/session')).json);
    expect(signedIn.headers['cache-control']).toBe('no-store');
    const signedOut = await call(gw, 'GET', '/session/status');
    expect(signedOut.status).toBe(200);
    expect(signedOut.json).toEqual({ data: null });
    expect(signedOut.headers['set-cookie']).toBeUndefined();
    const forged = await call(gw, 'GET', '/session/status', { headers: { cookie: 'tg_session=' + 'A'.repeat(43) } });
    expect(forged.json).toEqual({ data: null });
    expect(String(forged.headers['set-cookie'])).toMatch(/^tg_session=; Max-Age=0;/);
  });

  it('a wrong password and an unknown e-mail get the same 401 text; so do an account without a password and a malformed body of the right shape', async () => {
    expectError(
      await call(gw, 'POST', '/session', { json: { email: holder.email, password: 'wrong password!' } }),
      401,
      INVALID,
    );
    expectError(
      await call(gw, 'POST', '/session', { json: { email: uniqueEmail('nobody'), password: holder.password } }),
      401,
      INVALID,
    );
    const noPassword = await gw.createAccount(0);
    const account = await gw.admin('GET', `/accounts/${noPassword}`);
    expectError(
      await call(gw, 'POST', '/session', { json: { email: account.json.data.email, password: 'anything at all' } }),
      401,
      INVALID,
    );
    expectError(await call(gw, 'POST', '/session', { json: { email: '', password: '' } }), 401, INVALID);
    expectError(await call(gw, 'POST', '/session', { json: { email: holder.email } }), 400);
  });

  it('DELETE /session signs out: cookie cleared, the session no longer works (CSRF required)', async () => {
    const session = await signIn(gw, holder.email, holder.password);
    expectError(
      await asBrowser(gw, session, 'DELETE', '/session', { csrf: null }),
      403,
      'CSRF token missing or invalid',
    );
    const out = await asBrowser(gw, session, 'DELETE', '/session');
    expect(out.status, out.text).toBe(200);
    expect(out.json).toEqual({ deleted: true });
    expect(String(out.headers['set-cookie'])).toMatch(/^tg_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax$/);
    expectError(await asBrowser(gw, session, 'GET', '/session'), 401);
    expectError(await asBrowser(gw, session, 'GET', '/keys'), 401);
  });

  it('POST /session/revoke-all ends every session of the account, this one too, and no other account’s', async () => {
    const a = await signIn(gw, holder.email, holder.password);
    const b = await signIn(gw, holder.email, holder.password);
    const other = await createHolder(gw);
    const c = await signIn(gw, other.email, other.password);
    const result = await asBrowser(gw, a, 'POST', '/session/revoke-all');
    expect(result.status, result.text).toBe(200);
    expect(result.json.revoked).toBeGreaterThanOrEqual(2);
    expectError(await asBrowser(gw, a, 'GET', '/session'), 401);
    expectError(await asBrowser(gw, b, 'GET', '/session'), 401);
    expect((await asBrowser(gw, c, 'GET', '/session')).status).toBe(200);
  });

  it('CSRF: a state-changing session request needs the token and, when Origin is sent, our origin', async () => {
    const session = await signIn(gw, holder.email, holder.password);
    const create = (options: Parameters<typeof asBrowser>[4]) =>
      asBrowser(gw, session, 'POST', '/keys', { json: { name: 'csrf probe' }, ...options });
    expectError(await create({ csrf: null }), 403, 'CSRF token missing or invalid');
    expectError(await create({ csrf: 'x'.repeat(43) }), 403, 'CSRF token missing or invalid');
    const other = await signIn(gw, holder.email, holder.password);
    expectError(await create({ csrf: other.csrf }), 403, 'CSRF token missing or invalid'); // bound to its own session
    expectError(await create({ origin: 'http://evil.example' }), 403);
    expectError(await create({ origin: gw.url.replace('127.0.0.1', 'localhost') }), 403);
    expectError(await create({ origin: 'null' }), 403);
    const created = await create({});
    expect(created.status, created.text).toBe(201);
    // Without Origin (a non-browser client holding the cookie) the token alone suffices.
    expect((await create({ origin: null })).status).toBe(201);
    // Sign-in needs no token, but a foreign Origin cannot sign the browser in (login CSRF).
    expectError(
      await call(gw, 'POST', '/session', {
        json: { email: holder.email, password: holder.password },
        headers: { origin: 'http://evil.example' },
      }),
      403,
    );
    expect(
      (
        await call(gw, 'POST', '/session', {
          json: { email: holder.email, password: holder.password },
          headers: { origin: gw.url },
        })
      ).status,
    ).toBe(200);
  });

  it('the account API accepts the session: GET /account, /credits, /keys; POST /keys may mint a management key; GET /keys/{hash} carries is_management_key and app', async () => {
    const session = await signIn(gw, holder.email, holder.password);
    const account = await asBrowser(gw, session, 'GET', '/account');
    expect(account.status, account.text).toBe(200);
    expectFields(account.json.data, {
      id: 'string',
      email: 'string',
      created_at: 'string',
      balance: 'number',
      total_credits: 'number',
      total_purchased: 'number',
      total_granted: 'number',
      total_usage: 'number',
      is_free_tier: 'boolean',
    });
    expect(account.json.data).toMatchObject({
      id: holder.id,
      email: holder.email,
      total_credits: 10,
      total_granted: 10,
      total_purchased: 0,
      is_free_tier: true,
    });
    const credits = await asBrowser(gw, session, 'GET', '/credits');
    expect(credits.json).toEqual({ data: { total_credits: 10, total_usage: 0 } });

    const management = await asBrowser(gw, session, 'POST', '/keys', {
      json: { name: 'automation', management: true },
    });
    expect(management.status, management.text).toBe(201);
    expect(management.json.data).toMatchObject({ name: 'automation', is_management_key: true, app: null });
    const listed = await asBrowser(gw, session, 'GET', '/keys?include_disabled=true');
    expect(listed.status).toBe(200);
    expect(listed.json.data.find((k: { hash: string }) => k.hash === management.json.data.hash)).toMatchObject({
      is_management_key: true,
      app: null,
    });

    // The management key works as before (no cookie, no CSRF), but cannot mint management keys.
    const byKey = await call(gw, 'POST', '/keys', { key: management.json.key, json: { name: 'by key' } });
    expect(byKey.status).toBe(201);
    expect(byKey.json.data.is_management_key).toBe(false);
    expectError(
      await call(gw, 'POST', '/keys', { key: management.json.key, json: { name: 'escalate', management: true } }),
      400,
    );
    const account2 = await call(gw, 'GET', '/account', { key: management.json.key });
    expect(account2.json.data.id).toBe(holder.id);
    // An inference key is not enough for the account API (but reads /credits as before).
    expectError(await call(gw, 'GET', '/account', { key: byKey.json.key }), 401);
    expect((await call(gw, 'GET', '/credits', { key: byKey.json.key })).status).toBe(200);
    // Session-authenticated PATCH and DELETE.
    const renamed = await asBrowser(gw, session, 'PATCH', `/keys/${byKey.json.data.hash}`, {
      json: { name: 'renamed', disabled: true },
    });
    expect(renamed.json.data).toMatchObject({ name: 'renamed', disabled: true });
    expect((await asBrowser(gw, session, 'DELETE', `/keys/${byKey.json.data.hash}`)).json).toEqual({ deleted: true });
  });

  it('sign-up is closed by default: 403, nothing created', async () => {
    const email = uniqueEmail('signup');
    expectError(
      await call(gw, 'POST', '/signup', { json: { email, password: 'long enough password' } }),
      403,
      /Sign-up is closed/,
    );
    expectError(await call(gw, 'POST', '/signup', { json: { email: 'not an e-mail' } }), 403, /Sign-up is closed/);
    expectError(
      await call(gw, 'POST', '/session', { json: { email, password: 'long enough password' } }),
      401,
      INVALID,
    );
  });

  it('POST /account/password checks the current password, applies the policy, ends the other sessions', async () => {
    const mine = await createHolder(gw);
    const here = await signIn(gw, mine.email, mine.password);
    const elsewhere = await signIn(gw, mine.email, mine.password);
    expectError(
      await asBrowser(gw, here, 'POST', '/account/password', {
        json: { current_password: 'not it at all', new_password: 'a brand new password' },
      }),
      400,
    );
    expectError(
      await asBrowser(gw, here, 'POST', '/account/password', {
        json: { current_password: mine.password, new_password: 'short' },
      }),
      400,
      /at least 10/,
    );
    expectError(
      await asBrowser(gw, here, 'POST', '/account/password', {
        json: { current_password: mine.password, new_password: 'x'.repeat(257) },
      }),
      400,
      /at most 256/,
    );
    expectError(
      await asBrowser(gw, here, 'POST', '/account/password', {
        json: { current_password: mine.password, new_password: 'a brand new password' },
        csrf: null,
      }),
      403,
    );
    const changed = await asBrowser(gw, here, 'POST', '/account/password', {
      json: { current_password: mine.password, new_password: 'a brand new password' },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toEqual({ updated: true });
    expect((await asBrowser(gw, here, 'GET', '/session')).status).toBe(200);
    expectError(await asBrowser(gw, elsewhere, 'GET', '/session'), 401);
    expectError(
      await call(gw, 'POST', '/session', { json: { email: mine.email, password: mine.password } }),
      401,
      INVALID,
    );
    await signIn(gw, mine.email, 'a brand new password');
  });

  it('the operator sets a password (PUT /admin/accounts/{id}/password): policy applied, never echoed, old sessions end', async () => {
    const mine = await createHolder(gw);
    const before = await signIn(gw, mine.email, mine.password);
    const short = await gw.admin('PUT' as 'POST', `/accounts/${mine.id}/password`, { password: 'short' });
    expect(short.status).toBe(400);
    const set = await gw.admin('PUT' as 'POST', `/accounts/${mine.id}/password`, {
      password: 'operator chosen secret',
    });
    expect(set.status).toBe(200);
    expect(set.json.data).toEqual({ updated: true, sessions_revoked: 1 });
    expect(JSON.stringify(set.json)).not.toContain('operator chosen secret');
    expectError(await asBrowser(gw, before, 'GET', '/session'), 401);
    await signIn(gw, mine.email, 'operator chosen secret');
    expect(
      (await gw.admin('PUT' as 'POST', '/accounts/acct_missing/password', { password: 'operator chosen secret' }))
        .status,
    ).toBe(404);
    const stored = await gw.database.openDriver().all('SELECT password_hash FROM accounts WHERE id = ?', [mine.id]);
    expect(String(stored[0]!.password_hash)).toMatch(/^scrypt\$N=32768,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  });
});

describe('session cookie behind a proxy, and open sign-up', { timeout: 120_000 }, () => {
  let open: TestGateway;
  let proxied: TestGateway;

  beforeAll(async () => {
    const [sqlite] = STORE_TARGETS;
    open = await startTestGateway({
      target: sqlite!,
      configure: (file) => Object.assign(file, { accounts: { signup: 'open' } }),
    });
    proxied = await startTestGateway({
      target: sqlite!,
      configure: (file) => Object.assign(file, { server: { ...file.server, trust_proxy: true } }),
    });
  });
  afterAll(async () => {
    await open.close();
    await proxied.close();
  });

  it('Secure only when the request is HTTPS: X-Forwarded-Proto counts with server.trust_proxy, never without', async () => {
    const holder = await createHolder(proxied);
    const viaProxy = await call(proxied, 'POST', '/session', {
      json: { email: holder.email, password: holder.password },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(String(viaProxy.headers['set-cookie']).split('; ')).toContain('Secure');
    // Over HTTPS the cookie is __Host- prefixed (no sibling subdomain can plant one), and only that name is read.
    expect(String(viaProxy.headers['set-cookie'])).toMatch(
      /^__Host-tg_session=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax; Secure$/,
    );
    const token = cookieOf(viaProxy).split('=')[1]!;
    const overHttps = { 'x-forwarded-proto': 'https' };
    expect(
      (await call(proxied, 'GET', '/session', { headers: { ...overHttps, cookie: `__Host-tg_session=${token}` } }))
        .status,
    ).toBe(200);
    expect(
      (await call(proxied, 'GET', '/session', { headers: { ...overHttps, cookie: `tg_session=${token}` } })).status,
    ).toBe(401);
    const direct = await call(open, 'POST', '/session', {
      json: { email: 'x@example.test', password: 'whatever it is' },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(direct.status).toBe(401);
    const openHolder = await createHolder(open);
    const notTrusted = await call(open, 'POST', '/session', {
      json: { email: openHolder.email, password: openHolder.password },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(String(notTrusted.headers['set-cookie']).split('; ')).not.toContain('Secure');
    expect(String(notTrusted.headers['set-cookie'])).toMatch(/^tg_session=/);
    // Behind the proxy, the browser's origin is https://<forwarded host>: that is what Origin must equal.
    const session = { cookie: cookieOf(viaProxy), csrf: viaProxy.json.data.csrf_token as string };
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gateway.example' };
    expect(
      (
        await asBrowser(proxied, session, 'POST', '/keys', {
          json: { name: 'p' },
          headers,
          origin: 'https://gateway.example',
        })
      ).status,
    ).toBe(201);
    expectError(
      await asBrowser(proxied, session, 'POST', '/keys', { json: { name: 'p' }, headers, origin: proxied.url }),
      403,
    );
  });

  it('accounts.signup: open — POST /signup creates the account and signs in (201); taken e-mail 409; weak password 400', async () => {
    const email = uniqueEmail('signup');
    const result = await call(open, 'POST', '/signup', { json: { email, password: 'my own long password' } });
    expect(result.status, result.text).toBe(201);
    expect(result.json.data.account.email).toBe(email);
    const session = { cookie: cookieOf(result), csrf: result.json.data.csrf_token as string };
    const me = await asBrowser(open, session, 'GET', '/account');
    expect(me.json.data).toMatchObject({ email, balance: 0 });
    expectError(await call(open, 'POST', '/signup', { json: { email, password: 'my own long password' } }), 409);
    expectError(
      await call(open, 'POST', '/signup', { json: { email: uniqueEmail('signup'), password: 'too short' } }),
      400,
      /at least 10/,
    );
    expectError(
      await call(open, 'POST', '/signup', { json: { email: 'not an e-mail', password: 'long enough password' } }),
      400,
    );
    expectError(
      await call(open, 'POST', '/signup', {
        json: { email: uniqueEmail('signup'), password: 'long enough password' },
        headers: { origin: 'http://evil.example' },
      }),
      403,
    );
  });
});
