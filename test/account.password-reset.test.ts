/**
 * Password reset by e-mail, end to end at a real SMTP server on loopback: the same 202 for known and
 * unknown addresses, one mail with a dashboard link, a token that works once and ends every session,
 * expires after 30 minutes, and is not kept in the outbox once delivered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { createHolder, signIn, asBrowser } from './helpers/session.js';
import { capturedLogger } from './helpers/log-capture.js';
import { startInbox, type Inbox, type ReceivedMail } from './helpers/smtp-inbox.js';
import { sqliteTarget } from './helpers/store-targets.js';

const NEW_PASSWORD = 'a brand new passphrase';

describe('password reset', { timeout: 60_000 }, () => {
  let inbox: Inbox;
  let gw: TestGateway;
  let now = Date.now();
  const log = capturedLogger();

  beforeAll(async () => {
    inbox = await startInbox();
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_SMTP_URL: inbox.url },
      clock: { now: () => now },
      logger: log.logger,
      configure: (file) => {
        (file as Record<string, unknown>).mail = {
          from: 'Tollgate <noreply@tollgate.test>',
          public_url: 'https://dash.example.test/',
          poll_interval_ms: 100,
          retry_base_ms: 100,
          retry_max_ms: 400,
        };
      },
    });
    gw.gateway.startBackground();
  });

  afterAll(async () => {
    await gw?.close();
    await inbox?.close();
  });

  async function mailTo(email: string, count: number): Promise<ReceivedMail[]> {
    for (let i = 0; i < 300 && inbox.messages.filter((m) => m.to.includes(email)).length < count; i++)
      await new Promise((r) => setTimeout(r, 50));
    return inbox.messages.filter((m) => m.to.includes(email));
  }

  const tokenOf = (mail: ReceivedMail) =>
    /https:\/\/dash\.example\.test\/reset-password\?token=([A-Za-z0-9_-]{43})/.exec(mail.decoded)![1]!;

  it('answers the same for known and unknown addresses; the link works once, sets the password and ends every session', async () => {
    const holder = await createHolder(gw);
    const session = await signIn(gw, holder.email, holder.password);
    const known = await call(gw, 'POST', '/password-reset', { json: { email: holder.email.toUpperCase() } });
    const unknown = await call(gw, 'POST', '/password-reset', { json: { email: 'nobody@example.test' } });
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    expect(known.text).toBe(unknown.text);
    expect(known.json).toEqual({ accepted: true });

    const [mail] = await mailTo(holder.email, 1);
    expect(mail!.subject).toBe('Reset your Tollgate password');
    const token = tokenOf(mail!);
    // Only the hash is stored; the delivered message's bodies are dropped from the outbox.
    const driver = gw.database.openDriver();
    const tokens = await driver.all('SELECT token_hash FROM password_reset_tokens');
    expect(JSON.stringify(tokens)).not.toContain(token);
    for (let i = 0; i < 100 && (await gw.admin('GET', '/outbox')).json.data.length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const rows = await driver.all("SELECT text_body, html_body FROM mail_outbox WHERE kind = 'password_reset'");
    expect(JSON.stringify(rows)).not.toContain(token);

    expectError(
      await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: 'short' } }),
      400,
      /new_password/,
    );
    const done = await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: NEW_PASSWORD } });
    expect(done.status, done.text).toBe(200);
    expect(done.json).toEqual({ updated: true });
    // The old session is over, the old password too; the new one signs in.
    expectError(await asBrowser(gw, session, 'GET', '/session'), 401);
    expectError(await call(gw, 'POST', '/session', { json: { email: holder.email, password: holder.password } }), 401);
    await signIn(gw, holder.email, NEW_PASSWORD);
    // Single use.
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: 'yet another passphrase' } }),
      400,
      /invalid, was already used or has expired/,
    );
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', {
        json: { token: 'x'.repeat(43), new_password: NEW_PASSWORD },
      }),
      400,
    );
    // A mangled link (a token far too long) gets the same words, not a validator's "Too big" (outside check).
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', {
        json: { token: 'x'.repeat(300), new_password: NEW_PASSWORD },
      }),
      400,
      /^This password reset link is invalid, was already used or has expired; ask for a new one$/,
    );
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', {
        json: { token: 'x'.repeat(5_000), new_password: NEW_PASSWORD },
      }),
      400,
      /^This password reset link is invalid, was already used or has expired; ask for a new one$/,
    );
    // Nothing was sent to the unknown address.
    expect(inbox.messages.some((m) => m.to.includes('nobody@example.test'))).toBe(false);
  });

  it('one mail per 5 minutes per account; a link expires after 30 minutes', async () => {
    const holder = await createHolder(gw);
    await call(gw, 'POST', '/password-reset', { json: { email: holder.email } });
    const [first] = await mailTo(holder.email, 1);
    expect((await call(gw, 'POST', '/password-reset', { json: { email: holder.email } })).status).toBe(202);
    now += 5 * 60_000;
    await call(gw, 'POST', '/password-reset', { json: { email: holder.email } });
    const [, second] = await mailTo(holder.email, 2);
    expect(inbox.messages.filter((m) => m.to.includes(holder.email))).toHaveLength(2);
    now += 30 * 60_000 + 1;
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', {
        json: { token: tokenOf(second!), new_password: NEW_PASSWORD },
      }),
      400,
    );
    expectError(
      await call(gw, 'POST', '/password-reset/confirm', {
        json: { token: tokenOf(first!), new_password: NEW_PASSWORD },
      }),
      400,
    );
    await signIn(gw, holder.email, holder.password);
  });

  it('the 5 minutes are counted from the last mail, not from a clock boundary', async () => {
    const holder = await createHolder(gw);
    const FIVE_MINUTES = 5 * 60_000;
    const boundary = (Math.floor(now / FIVE_MINUTES) + 2) * FIVE_MINUTES;
    // The work happens after the 202: the clock moves on only once its outcome is logged.
    const handled = () => log.lines.filter((line) => /password reset (mail queued|asked again)/.test(line)).length;
    const ask = async (at: number) => {
      now = at;
      const before = handled();
      expect((await call(gw, 'POST', '/password-reset', { json: { email: holder.email } })).status).toBe(202);
      for (let i = 0; i < 200 && handled() === before; i++) await new Promise((r) => setTimeout(r, 10));
      expect(handled()).toBe(before + 1);
    };
    await ask(boundary - 1_000);
    await mailTo(holder.email, 1);
    await ask(boundary + 2_000); // 3 s later, past a multiple of 5 minutes: no mail
    await ask(boundary - 1_000 + FIVE_MINUTES); // 5 minutes after the first: a mail
    const [, second] = await mailTo(holder.email, 2);
    await new Promise((r) => setTimeout(r, 500)); // the sender polls every 100 ms: a third would be here
    expect(inbox.messages.filter((m) => m.to.includes(holder.email))).toHaveLength(2);
    // The second mail is the last request's: its link outlives one asked for 3 s after the first.
    now = boundary + 2_000 + 30 * 60_000 + 500;
    const confirmed = await call(gw, 'POST', '/password-reset/confirm', {
      json: { token: tokenOf(second!), new_password: NEW_PASSWORD },
    });
    expect(confirmed.status).toBeLessThan(300);
    await signIn(gw, holder.email, NEW_PASSWORD);
  });

  it('a holder locked out by failed sign-ins signs in with the password the reset link set, at once', async () => {
    const holder = await createHolder(gw);
    let refused = 0;
    for (let i = 0; i < 8; i++) {
      const wrong = await call(gw, 'POST', '/session', { json: { email: holder.email, password: `forgotten ${i}` } });
      if (wrong.status === 429) refused++;
      else expect(wrong.status).toBe(401);
    }
    expect(refused).toBeGreaterThan(0);
    expectError(await call(gw, 'POST', '/session', { json: { email: holder.email, password: holder.password } }), 429);

    now += 6 * 60_000; // past the last test's mail to another holder: no shared clock limit applies
    expect((await call(gw, 'POST', '/password-reset', { json: { email: holder.email } })).status).toBe(202);
    const [mail] = await mailTo(holder.email, 1);
    const confirmed = await call(gw, 'POST', '/password-reset/confirm', {
      json: { token: tokenOf(mail!), new_password: NEW_PASSWORD },
    });
    expect(confirmed.status).toBeLessThan(300);
    await signIn(gw, holder.email, NEW_PASSWORD);
    // Guessing the new password gets budgets of its own, as before.
    for (let i = 0; i < 8; i++)
      await call(gw, 'POST', '/session', { json: { email: holder.email, password: `guess ${i}` } });
    expectError(await call(gw, 'POST', '/session', { json: { email: holder.email, password: NEW_PASSWORD } }), 429);
  });

  it('is available where mail.public_url is set (GET /password-reset)', async () => {
    expect((await call(gw, 'GET', '/password-reset')).json).toEqual({ data: { available: true } });
  });

  it('refuses a cross-origin page', async () => {
    expectError(
      await call(gw, 'POST', '/password-reset', {
        json: { email: 'a@example.test' },
        headers: { origin: 'https://evil.example' },
      }),
      403,
    );
  });
});

describe('password reset without mail.public_url', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw?.close());

  it('is refused with a 403 that says whom to ask, the same for every address, and queues nothing', async () => {
    // It answered 202 "a link is on its way", and no link was ever made (outside check).
    const holder = await createHolder(gw);
    const known = await call(gw, 'POST', '/password-reset', { json: { email: holder.email } });
    const unknown = await call(gw, 'POST', '/password-reset', { json: { email: 'nobody@example.test' } });
    expectError(known, 403, /not set up on this gateway.*ask its operator/);
    expect(known.text).toBe(unknown.text);
    expect((await gw.admin('GET', '/outbox')).json.data).toEqual([]);
  });

  it('says so to the dashboard before anything is sent (GET /password-reset)', async () => {
    expect((await call(gw, 'GET', '/password-reset')).json).toEqual({ data: { available: false } });
  });
});
