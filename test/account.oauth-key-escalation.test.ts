/**
 * `POST /auth/keys/code` yields a key with whatever terms the caller names, so only a caller that
 * could make such a key itself may ask: the holder (session, management key) or an unrestricted
 * inference key. A key with a limit, an expiry or guardrails, or the key an app was given, is refused
 * (403) — it would otherwise mint itself a key without its restrictions, one that outlives revoking
 * the app. The key_label an app chooses (shown in the dashboard and in mails) loses its control
 * characters, and codes not yet exchanged are void once the holder signs out everywhere (or changes
 * the password).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, createHolder, signIn } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

const VERIFIER = 'escalation-verifier-'.padEnd(64, 'x');
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

/** `POST /auth/keys/code` with `key`, then the app's exchange: the new key (or the refusal's status). */
async function mintWith(gw: TestGateway, key: string, body: Record<string, unknown>) {
  const code = await call(gw, 'POST', '/auth/keys/code', {
    key,
    json: { code_challenge: CHALLENGE, code_challenge_method: 'S256', ...body },
  });
  if (code.status !== 200) return { refused: code.status, key: null as string | null };
  const exchanged = await call(gw, 'POST', '/auth/keys', {
    json: { code: code.json.data.id, code_verifier: VERIFIER },
  });
  expect(exchanged.status, exchanged.text).toBe(200);
  return { refused: null, key: exchanged.json.key as string };
}

describe('who may ask for an authorization code with a key', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  it('an inference key with a limit, an expiry and an allowed model is refused; a management key may', async () => {
    const holder = await createHolder(gw);
    const management = (await gw.createKey(holder.id, { management: true })).key;
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const restricted = await gw.createKey(holder.id, {
      name: 'CI bot',
      limit: 1,
      expires_at: expiresAt,
      allowed_models: ['test/chat:free'],
    });

    // The restricted key asks for a key with no limit, no expiry (and, being new, no model list).
    const minted = await mintWith(gw, restricted.key, { callback_url: 'https://attacker.example/cb' });
    expect(minted.refused).toBe(403);
    // The holder's own ways still work.
    const byManagement = await mintWith(gw, management, { callback_url: 'https://app.example/cb' });
    expect(byManagement.key).not.toBeNull();
  });

  it('the key a third-party app was given cannot ask for another', async () => {
    const holder = await createHolder(gw);
    const management = (await gw.createKey(holder.id, { management: true })).key;

    // The holder authorizes an app with a 0.5 USD limit and a 2-day expiry.
    const appKey = await mintWith(gw, management, {
      callback_url: 'https://third-party.example/cb',
      key_label: 'Third-party app',
      limit: 0.5,
      expires_at: new Date(Date.now() + 2 * 86_400_000).toISOString(),
    });
    expect(appKey.key).not.toBeNull();

    // The app uses ITS key to ask for another one, without the limit or expiry.
    const escalated = await mintWith(gw, appKey.key!, { callback_url: 'https://third-party.example/cb2' });
    expect(escalated.refused).toBe(403);
    // Even an app key with no limit or expiry is an app's: refused too.
    const open = await mintWith(gw, management, { callback_url: 'https://open-app.example/cb' });
    expect((await mintWith(gw, open.key!, { callback_url: 'https://open-app.example/cb2' })).refused).toBe(403);
  });

  it('an app-chosen key_label loses its control characters', async () => {
    const holder = await createHolder(gw);
    const management = (await gw.createKey(holder.id, { management: true })).key;
    const minted = await mintWith(gw, management, {
      callback_url: 'https://label.example/cb',
      key_label: 'Invoice\r\nBcc: x@evil.example\u0007 app',
    });
    expect(minted.key).not.toBeNull();
    const apps = await call(gw, 'GET', '/apps', { key: management });
    expect(apps.json.data[0].app.name).toBe('Invoice Bcc: x@evil.example app');
  });

  it('codes not yet exchanged are void once the holder signs out everywhere', async () => {
    const holder = await createHolder(gw);
    const management = (await gw.createKey(holder.id, { management: true })).key;
    const code = await call(gw, 'POST', '/auth/keys/code', {
      key: management,
      json: { callback_url: 'https://late.example/cb', code_challenge: CHALLENGE, code_challenge_method: 'S256' },
    });
    expect(code.status, code.text).toBe(200);
    const session = await signIn(gw, holder.email, holder.password);
    expect((await asBrowser(gw, session, 'POST', '/session/revoke-all')).status).toBe(200);
    const exchanged = await call(gw, 'POST', '/auth/keys', {
      json: { code: code.json.data.id, code_verifier: VERIFIER },
    });
    expect(exchanged.status).toBe(403);
  });
});
