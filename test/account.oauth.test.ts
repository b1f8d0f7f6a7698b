/**
 * OAuth PKCE (docs/api.md) with the official `@openrouter/sdk`, unmodified: `createAuthCode` with a
 * key, `exchangeAuthCodeForAPIKey` with the verifier, `createAuthorizationUrl` feeding the approval
 * endpoints of the `/auth` page (session + CSRF). On both stores, on an injected clock.
 */
import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, HELLO } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, createHolder, signIn, type BrowserSession } from './helpers/session.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const NO_RETRIES = { strategy: 'none' } as const;
const CALLBACK = 'https://app.example/oauth/callback?state=xyz';

function steppableClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** The SDK's error for a refused call, with its HTTP status and message. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; message: string; name: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof errors.OpenRouterError)
      return { status: error.statusCode, message: JSON.parse(error.body).error.message, name: error.constructor.name };
    throw error;
  }
  throw new Error('expected the call to be refused');
}

describe.each(STORE_TARGETS)('OAuth PKCE ($name)', { timeout: 120_000 }, (target) => {
  let gw: TestGateway;
  let holder: { id: string; email: string; password: string };
  let inferenceKey: string;
  let managementKey: string;
  let app: OpenRouter; // the app: no key of its own
  let owner: OpenRouter; // the holder's own SDK client, with an inference key
  const clock = steppableClock();

  beforeAll(async () => {
    gw = await startTestGateway({ target, clock });
    holder = await createHolder(gw);
    inferenceKey = (await gw.createKey(holder.id)).key;
    managementKey = (await gw.createKey(holder.id, { management: true })).key;
    app = new OpenRouter({ serverURL: gw.api, retryConfig: NO_RETRIES });
    owner = new OpenRouter({ serverURL: gw.api, apiKey: inferenceKey, retryConfig: NO_RETRIES });
  });
  afterAll(() => gw.close());

  it('createAuthCode (inference key) → exchangeAuthCodeForAPIKey (S256 verifier) → a key carrying the app, limit, reset and expiry that serves a chat completion', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const expiresAt = new Date(clock.now() + 3 * 86_400_000);
    const created = await owner.oAuth.createAuthCode({
      requestBody: {
        callbackUrl: CALLBACK,
        codeChallenge,
        codeChallengeMethod: 'S256',
        keyLabel: 'Example App',
        limit: 2,
        usageLimitType: 'daily',
        expiresAt,
      },
    });
    expect(Number.isInteger(created.data.appId)).toBe(true);
    expect(Math.abs(Date.parse(created.data.createdAt) - clock.now())).toBeLessThan(60_000);
    // Only the code's hash is stored.
    const stored = await gw.database.openDriver().all('SELECT code_hash FROM oauth_codes');
    expect(stored.map((r) => r.code_hash)).not.toContain(created.data.id);

    const exchanged = await app.oAuth.exchangeAuthCodeForAPIKey({
      requestBody: { code: created.data.id, codeVerifier, codeChallengeMethod: 'S256' },
    });
    expect(exchanged.userId).toBe(holder.id);
    expect(exchanged.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);

    const completion = await chat(gw, exchanged.key, { model: 'test/chat', messages: HELLO });
    expect(completion.status, completion.text).toBe(200);
    const info = await call(gw, 'GET', '/key', { key: exchanged.key });
    expect(info.json.data).toMatchObject({
      limit: 2,
      limit_reset: 'daily',
      is_management_key: false,
      expires_at: expiresAt.toISOString(),
    });

    const keys = await call(gw, 'GET', '/keys', { key: managementKey });
    const issued = keys.json.data.find((k: { name: string }) => k.name === 'Example App');
    expect(issued.app).toEqual({ id: created.data.appId, name: 'Example App', origin: 'https://app.example' });
    const apps = await call(gw, 'GET', '/apps', { key: managementKey });
    expect(apps.json.data[0]).toMatchObject({
      app: { id: created.data.appId, name: 'Example App', origin: 'https://app.example' },
      key_hash: issued.hash,
      limit: 2,
      expires_at: expiresAt.toISOString(),
      disabled: false,
    });

    // Single use: the same code again, even with the right verifier.
    const reused = await refusal(
      app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: created.data.id, codeVerifier } }),
    );
    expect(reused).toMatchObject({
      status: 403,
      message: 'Invalid code or code_verifier',
      name: 'ForbiddenResponseError',
    });
  });

  it('a wrong or missing verifier → 403 (the code survives for the right one); a method other than the request’s → 400; unknown code → 403', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const { data } = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: 'S256' },
    });
    const other = await app.oAuth.createSHA256CodeChallenge();
    expect(
      await refusal(
        app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: data.id, codeVerifier: other.codeVerifier } }),
      ),
    ).toMatchObject({ status: 403, message: 'Invalid code or code_verifier' });
    expect(await refusal(app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: data.id } }))).toMatchObject({
      status: 403,
      message: 'Invalid code or code_verifier',
    });
    // The challenge itself is not a verifier (S256 hashes the verifier).
    expect(
      await refusal(
        app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: data.id, codeVerifier: codeChallenge } }),
      ),
    ).toMatchObject({ status: 403 });
    const mismatch = await refusal(
      app.oAuth.exchangeAuthCodeForAPIKey({
        requestBody: { code: data.id, codeVerifier: codeChallenge, codeChallengeMethod: 'plain' },
      }),
    );
    expect(mismatch).toMatchObject({ status: 400, name: 'BadRequestResponseError' });
    expect(mismatch.message).toMatch(/code_challenge_method plain does not match/);
    expect(
      await refusal(app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: 'no-such-code', codeVerifier } })),
    ).toMatchObject({ status: 403, message: 'Invalid code or code_verifier' });
    expect((await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: data.id, codeVerifier } })).userId).toBe(
      holder.id,
    );
  });

  it('plain PKCE and no PKCE both work; a code made without PKCE refuses a claimed method (400) and a verifier (403)', async () => {
    const verifier = 'a-plain-verifier-that-is-long-enough-0123456789';
    const plain = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: 'http://localhost:3000/cb', codeChallenge: verifier, codeChallengeMethod: 'plain' },
    });
    expect(
      await refusal(
        app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: plain.data.id, codeVerifier: verifier + 'x' } }),
      ),
    ).toMatchObject({ status: 403 });
    expect(
      (
        await app.oAuth.exchangeAuthCodeForAPIKey({
          requestBody: { code: plain.data.id, codeVerifier: verifier, codeChallengeMethod: 'plain' },
        })
      ).userId,
    ).toBe(holder.id);
    const bare = await owner.oAuth.createAuthCode({ requestBody: { callbackUrl: 'http://127.0.0.1:9999/cb' } });
    expect(
      await refusal(
        app.oAuth.exchangeAuthCodeForAPIKey({
          requestBody: { code: bare.data.id, codeVerifier: verifier, codeChallengeMethod: 'S256' },
        }),
      ),
    ).toMatchObject({ status: 400 });
    // A verifier for a code issued without a challenge is a PKCE downgrade (RFC 9700 §2.1.1): 403.
    expect(
      await refusal(
        app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: bare.data.id, codeVerifier: verifier } }),
      ),
    ).toMatchObject({ status: 403 });
    // As OAuth's token endpoint (RFC 6749 §3.2): an empty verifier is no verifier, unknown fields are ignored.
    const exchanged = await call(gw, 'POST', '/auth/keys', {
      json: { code: bare.data.id, code_verifier: '', code_challenge_method: '', client_id: 'ignored' },
    });
    expect(exchanged.status, exchanged.text).toBe(200);
    const key = exchanged.json.key as string;
    expect((await call(gw, 'GET', '/key', { key })).status).toBe(200);
    // Without key_label, the app's title header names it (the SDK's `appTitle` option).
    const titled = new OpenRouter({
      serverURL: gw.api,
      apiKey: inferenceKey,
      appTitle: '  Titled App ',
      retryConfig: NO_RETRIES,
    });
    const code = (await titled.oAuth.createAuthCode({ requestBody: { callbackUrl: 'https://titled.example/cb' } })).data
      .id;
    const titledKey = (await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code } })).key;
    const titledInfo = await call(gw, 'GET', '/keys', { key: managementKey });
    expect(
      titledInfo.json.data.find((k: { app: { origin: string } | null }) => k.app?.origin === 'https://titled.example')
        .app.name,
    ).toBe('Titled App');
    expect((await call(gw, 'GET', '/key', { key: titledKey })).status).toBe(200);
    // A management key may ask for codes too.
    const byManager = new OpenRouter({ serverURL: gw.api, apiKey: managementKey, retryConfig: NO_RETRIES });
    expect(
      Number.isInteger((await byManager.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK } })).data.appId),
    ).toBe(true);
  });

  it('concurrent exchanges of one PKCE code with its verifier: exactly one key, and it is revoked (a replay at the same moment)', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const { data } = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: 'S256' },
    });
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        call(gw, 'POST', '/auth/keys', { json: { code: data.id, code_verifier: codeVerifier } }),
      ),
    );
    const issued = results.filter((r) => r.status === 200);
    expect(issued).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 403, 'Invalid code or code_verifier');
    // The losers presented the used code with its right verifier: whoever races the app with a leaked
    // code and verifier must not keep a live key, whichever of them won.
    expect((await call(gw, 'GET', '/key', { key: issued[0]!.json.key as string })).status).toBe(401);
  });

  it('a code presented again with its verifier revokes the key it gave (RFC 6749 4.1.2); a wrong verifier revokes nothing', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const { data } = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: 'S256' },
    });
    const exchange = (verifier: string) =>
      call(gw, 'POST', '/auth/keys', { json: { code: data.id, code_verifier: verifier } });
    const first = await exchange(codeVerifier);
    expect(first.status, first.text).toBe(200);
    const issued = first.json.key as string;
    expect((await call(gw, 'GET', '/key', { key: issued })).status).toBe(200);
    // Someone who saw only the used code cannot revoke the app's key.
    expectError(await exchange('x'.repeat(43)), 403, 'Invalid code or code_verifier');
    expect((await call(gw, 'GET', '/key', { key: issued })).status).toBe(200);
    // The code and its verifier again: refused, and the key the first exchange gave is revoked.
    expectError(await exchange(codeVerifier), 403, 'Invalid code or code_verifier');
    expect((await call(gw, 'GET', '/key', { key: issued })).status).toBe(401);
    expectError(await exchange(codeVerifier), 403, 'Invalid code or code_verifier');

    // A code without PKCE replayed (seen in a callback URL) revokes nothing: the code alone proves nothing.
    const bare = await owner.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK } });
    const bareKey = (await call(gw, 'POST', '/auth/keys', { json: { code: bare.data.id } })).json.key as string;
    expectError(await call(gw, 'POST', '/auth/keys', { json: { code: bare.data.id } }), 403);
    expect((await call(gw, 'GET', '/key', { key: bareKey })).status).toBe(200);
  });

  it('an app’s label loses the characters that would make it read as something else (bidi overrides, zero-width)', async () => {
    // "Budget helper \u202Egro.elgoog//:sptth" renders as "Budget helper https://google.org" (outside check).
    const created = await owner.oAuth.createAuthCode({
      requestBody: {
        callbackUrl: 'https://bidi.example/cb',
        keyLabel: 'Budget\u200b helper \u202egro.elgoog//:sptth\u2066',
      },
    });
    const key = (await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: created.data.id } })).key;
    const listed = await call(gw, 'GET', '/keys', { key: managementKey });
    const row = listed.json.data.find(
      (k: { app: { origin: string } | null }) => k.app?.origin === 'https://bidi.example',
    );
    expect(row.name).toBe('Budget helper gro.elgoog//:sptth');
    expect(row.app.name).toBe('Budget helper gro.elgoog//:sptth');
    expect((await call(gw, 'GET', '/key', { key })).status).toBe(200);
  });

  it('apps get integer ids: one per origin, stable, distinct under concurrent first sight', async () => {
    const origins = Array.from({ length: 6 }, (_, i) => `https://concurrent-${i}.example`);
    const created = await Promise.all(
      [...origins, ...origins].map((origin) =>
        owner.oAuth.createAuthCode({ requestBody: { callbackUrl: `${origin}/cb` } }),
      ),
    );
    const ids = created.map((c) => c.data.appId);
    for (let i = 0; i < origins.length; i++) expect(ids[i + origins.length]).toBe(ids[i]);
    expect(new Set(ids.slice(0, origins.length)).size).toBe(origins.length);
    const again = await owner.oAuth.createAuthCode({ requestBody: { callbackUrl: `${origins[0]}/elsewhere?x=1` } });
    expect(again.data.appId).toBe(ids[0]);
  });

  it('codes expire after 10 minutes: 403 "Authorization code expired"', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const fresh = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: 'S256' },
    });
    const stale = await owner.oAuth.createAuthCode({
      requestBody: { callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: 'S256' },
    });
    clock.advance(9 * 60_000);
    expect(
      (await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: fresh.data.id, codeVerifier } })).userId,
    ).toBe(holder.id);
    clock.advance(60_000);
    expect(
      await refusal(app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: stale.data.id, codeVerifier } })),
    ).toMatchObject({ status: 403, message: 'Authorization code expired' });
  });

  it('a key issued with an expiry is refused with 401 "API key has expired" once it passed', async () => {
    const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
    const { data } = await owner.oAuth.createAuthCode({
      requestBody: {
        callbackUrl: CALLBACK,
        codeChallenge,
        codeChallengeMethod: 'S256',
        expiresAt: new Date(clock.now() + 3_600_000),
      },
    });
    const { key } = await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: data.id, codeVerifier } });
    expect((await chat(gw, key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    clock.advance(3_600_000);
    expectError(await chat(gw, key, { model: 'test/chat', messages: HELLO }), 401, 'API key has expired');
  });

  it('createAuthCode refuses callback URLs that could redirect anywhere (400 naming the problem) and bad terms; needs a key', async () => {
    const refused = async (body: Record<string, unknown>, message: RegExp) =>
      expectError(await call(gw, 'POST', '/auth/keys/code', { key: inferenceKey, json: body }), 400, message);
    await refused({ callback_url: 'javascript:alert(1)' }, /must use https/);
    await refused({ callback_url: 'data:text/html,hi' }, /must use https/);
    await refused({ callback_url: 'http://evil.example/cb' }, /must use https/);
    await refused({ callback_url: 'https://user:pw@evil.example/cb' }, /user name or password/);
    await refused({ callback_url: 'https://app.example/cb#frag' }, /fragment/);
    await refused({ callback_url: 'not a url' }, /not a valid absolute URL/);
    await refused(
      { callback_url: CALLBACK, code_challenge: 'short', code_challenge_method: 'S256' },
      /code_challenge must be 43-128/,
    );
    await refused({ callback_url: CALLBACK, code_challenge_method: 'S256' }, /without code_challenge/);
    await refused({ callback_url: CALLBACK, expires_at: new Date(clock.now() - 1000).toISOString() }, /in the future/);
    await refused({ callback_url: CALLBACK, limit: -1 }, /limit/);
    expectError(await call(gw, 'POST', '/auth/keys/code', { json: { callback_url: CALLBACK } }), 401);
  });

  describe('the approval page’s endpoints (session)', () => {
    let session: BrowserSession;
    beforeAll(async () => {
      session = await signIn(gw, holder.email, holder.password);
    });

    it('createAuthorizationUrl → preview → approve → redirect_url with a code the SDK exchanges', async () => {
      const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
      const url = new URL(
        await app.oAuth.createAuthorizationUrl({
          callbackUrl: CALLBACK,
          codeChallenge,
          codeChallengeMethod: 'S256',
          limit: 5,
        }),
      );
      expect(url.origin + url.pathname).toBe(`${gw.url}/auth`);
      const preview = await asBrowser(gw, session, 'GET', `/oauth/authorize${url.search}`);
      expect(preview.status, preview.text).toBe(200);
      expect(preview.json.data).toEqual({
        app: { origin: 'https://app.example', name: 'https://app.example' },
        callback_url: CALLBACK,
        key_label: null,
        code_challenge_method: 'S256',
        limit: 5,
        usage_limit_type: null,
        expires_at: null,
      });
      // What the page shows of a bad request is the message: in words, not a validator's (outside check).
      const badLimit = new URL(url);
      badLimit.searchParams.set('limit', 'abc');
      expectError(
        await asBrowser(gw, session, 'GET', `/oauth/authorize${badLimit.search}`),
        400,
        'Invalid request: limit must be a number of USD',
      );
      expectError(
        await asBrowser(gw, session, 'POST', '/oauth/authorize', {
          json: { callback_url: CALLBACK, decision: 'deny', state: 's'.repeat(1025) },
        }),
        400,
        'Invalid request: state must be at most 1024 characters',
      );
      // The preview refuses it too: the holder is not asked to decide what could only be refused
      // (Approve and Deny both failed on the page, and the app heard nothing: outside check).
      const longState = new URL(url);
      longState.searchParams.set('state', 's'.repeat(1025));
      expectError(
        await asBrowser(gw, session, 'GET', `/oauth/authorize${longState.search}`),
        400,
        'Invalid request: state must be at most 1024 characters',
      );

      const params = Object.fromEntries(url.searchParams);
      const body = {
        callback_url: params.callback_url,
        code_challenge: params.code_challenge,
        code_challenge_method: params.code_challenge_method,
        limit: Number(params.limit),
        decision: 'approve',
      };
      expectError(
        await asBrowser(gw, session, 'POST', '/oauth/authorize', { json: body, csrf: null }),
        403,
        'CSRF token missing or invalid',
      );
      expectError(
        await asBrowser(gw, session, 'POST', '/oauth/authorize', { json: body, origin: 'https://app.example' }),
        403,
      );
      expectError(await call(gw, 'POST', '/oauth/authorize', { json: body, key: managementKey }), 401);
      const approved = await asBrowser(gw, session, 'POST', '/oauth/authorize', { json: body });
      expect(approved.status, approved.text).toBe(200);
      const redirect = new URL(approved.json.data.redirect_url);
      expect(redirect.origin + redirect.pathname).toBe('https://app.example/oauth/callback');
      expect(redirect.searchParams.get('state')).toBe('xyz');
      const code = redirect.searchParams.get('code')!;
      const { key, userId } = await app.oAuth.exchangeAuthCodeForAPIKey({
        requestBody: { code, codeVerifier, codeChallengeMethod: 'S256' },
      });
      expect(userId).toBe(holder.id);
      expect((await call(gw, 'GET', '/key', { key })).json.data.limit).toBe(5);
    });

    it('deny → redirect_url with error=access_denied and no code; invalid callbacks → 400; no session → 401', async () => {
      const denied = await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: { callback_url: CALLBACK, decision: 'deny' },
      });
      expect(denied.status).toBe(200);
      const redirect = new URL(denied.json.data.redirect_url);
      expect(redirect.searchParams.get('error')).toBe('access_denied');
      expect(redirect.searchParams.has('code')).toBe(false);
      expect(redirect.searchParams.get('state')).toBe('xyz'); // the callback's own query is kept
      // An app's own `state` (OAuth 2.0) comes back as given, on a denial and on an approval.
      const state = 'st&te=/ü?#1';
      const deniedWithState = await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: { callback_url: CALLBACK, decision: 'deny', state },
      });
      expect(new URL(deniedWithState.json.data.redirect_url).searchParams.get('state')).toBe(state);
      const approvedWithState = await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: { callback_url: CALLBACK, decision: 'approve', state },
      });
      const back = new URL(approvedWithState.json.data.redirect_url);
      expect([back.searchParams.get('state'), back.searchParams.has('code')]).toEqual([state, true]);
      expectError(
        await asBrowser(gw, session, 'POST', '/oauth/authorize', {
          json: { callback_url: CALLBACK, decision: 'approve', state: 'x'.repeat(1025) },
        }),
        400,
      );
      expectError(
        await asBrowser(gw, session, 'POST', '/oauth/authorize', {
          json: { callback_url: 'javascript:alert(1)', decision: 'approve' },
        }),
        400,
        /must use https/,
      );
      expectError(
        await asBrowser(
          gw,
          session,
          'GET',
          `/oauth/authorize?callback_url=${encodeURIComponent('http://evil.example/')}`,
        ),
        400,
        /must use https/,
      );
      // The page may pass absent query parameters through as empty strings or nulls.
      const blank = await asBrowser(
        gw,
        session,
        'GET',
        `/oauth/authorize?callback_url=${encodeURIComponent(CALLBACK)}&code_challenge=&code_challenge_method=&key_label=&limit=&state=abc`,
      );
      expect(blank.status, blank.text).toBe(200);
      expect(blank.json.data).toMatchObject({ code_challenge_method: null, key_label: null, limit: null });
      const blankPost = await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: {
          callback_url: CALLBACK,
          code_challenge: '',
          code_challenge_method: null,
          key_label: '',
          limit: null,
          expires_at: null,
          decision: 'approve',
        },
      });
      expect(blankPost.status, blankPost.text).toBe(200);
      expect(new URL(blankPost.json.data.redirect_url).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expectError(await asBrowser(gw, session, 'GET', '/oauth/authorize'), 400);
      expectError(await call(gw, 'GET', `/oauth/authorize?callback_url=${encodeURIComponent(CALLBACK)}`), 401);
    });

    it('GET /apps lists the authorizations; DELETE /apps/{id} revokes the key (401 afterwards); another account’s id → 404', async () => {
      const { codeChallenge, codeVerifier } = await app.oAuth.createSHA256CodeChallenge();
      const approved = await asBrowser(gw, session, 'POST', '/oauth/authorize', {
        json: {
          callback_url: 'https://revoke.example/cb',
          code_challenge: codeChallenge,
          code_challenge_method: 'S256',
          key_label: 'Revokable',
          decision: 'approve',
        },
      });
      const code = new URL(approved.json.data.redirect_url).searchParams.get('code')!;
      const { key } = await app.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code, codeVerifier } });
      const apps = await asBrowser(gw, session, 'GET', '/apps');
      const grant = apps.json.data.find((g: { app: { origin: string } }) => g.app.origin === 'https://revoke.example');
      expect(grant).toMatchObject({
        app: { name: 'Revokable', origin: 'https://revoke.example' },
        key_name: 'Revokable',
        limit: null,
        expires_at: null,
        disabled: false,
      });
      expect(grant.id).toMatch(/^auth_/);
      expect(grant.key_label).toMatch(/^sk-tg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/);

      const stranger = await createHolder(gw);
      const strangerSession = await signIn(gw, stranger.email, stranger.password);
      expectError(await asBrowser(gw, strangerSession, 'DELETE', `/apps/${grant.id}`), 404);
      expectError(await asBrowser(gw, session, 'DELETE', `/apps/${grant.id}`, { csrf: null }), 403);
      expect((await asBrowser(gw, session, 'DELETE', `/apps/${grant.id}`)).json).toEqual({ deleted: true });
      expectError(await chat(gw, key, { model: 'test/chat', messages: HELLO }), 401);
      const after = await asBrowser(gw, session, 'GET', '/apps');
      expect(after.json.data.find((g: { id: string }) => g.id === grant.id)).toBeUndefined();
      expectError(await asBrowser(gw, session, 'DELETE', `/apps/${grant.id}`), 404);
    });
  });
});
