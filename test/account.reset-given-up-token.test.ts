/**
 * A password-reset message the outbox gives up on — refused for good (SMTP 550), still failing after
 * `mail.max_attempts`, or too old to send (its token would have expired) — keeps no link: its text
 * and HTML bodies are blanked as a delivered one's are, and its token is voided in the same
 * transaction, since its holder never received it. Before, the row kept the link with a live token in
 * plain text, and anyone reading the database (a backup, a replica, an operator tool listing failed
 * mail) could set the account's password with it. The same on the embedded store and PostgreSQL.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { signIn, uniqueEmail } from './helpers/session.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const TOKEN_IN_LINK = /reset-password\?token=([A-Za-z0-9_-]{43})/;

describe.each(STORE_TARGETS)('a password-reset mail the outbox gives up on ($name)', { timeout: 60_000 }, (target) => {
  let gw: TestGateway;
  let smtp: SMTPServer;
  /** How far the gateway's clock is ahead of the system's. */
  let skew = 0;

  beforeAll(async () => {
    // Refuses recipients named `refused-…` for good (550), everyone else for now (451: retried).
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo: (address, _session, callback) => {
        const permanent = address.address.startsWith('refused-');
        const error = new Error(permanent ? 'Mailbox unavailable' : 'Try again later') as Error & {
          responseCode: number;
        };
        error.responseCode = permanent ? 550 : 451;
        callback(error);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    gw = await startTestGateway({
      target,
      env: { TOLLGATE_SMTP_URL: `smtp://127.0.0.1:${port}` },
      clock: { now: () => Date.now() + skew },
      configure: (file) => {
        (file as Record<string, unknown>).mail = {
          from: 'Tollgate <noreply@tollgate.test>',
          public_url: 'https://dash.example.test/',
          poll_interval_ms: 100,
          retry_base_ms: 100,
          retry_max_ms: 200,
          max_attempts: 2,
        };
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  });

  async function outboxRow(email: string, given: (row: Record<string, unknown>) => boolean) {
    const driver = gw.database.openDriver();
    for (let i = 0; i < 300; i++) {
      const [row] = await driver.all(
        "SELECT attempts, failed_at, last_error, text_body, html_body FROM mail_outbox WHERE kind = 'password_reset' AND recipient = ?",
        [email],
      );
      if (row && given(row)) return row;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no such reset message for ${email}`);
  }

  it('keeps neither its link nor a usable token, whichever way it was given up', async () => {
    const holder = async (prefix: string) => {
      const email = uniqueEmail(prefix);
      const password = 'correct horse battery staple';
      expect((await gw.admin('POST', '/accounts', { email, password })).status).toBe(201);
      expect((await call(gw, 'POST', '/password-reset', { json: { email } })).status).toBe(202);
      // Queued, not sent yet (the sender is not running): the pending row holds the link, as it must.
      const pending = await outboxRow(email, () => true);
      const token = TOKEN_IN_LINK.exec(String(pending.text_body))![1]!;
      return { email, password, token };
    };
    // Queued more than 30 minutes before the sender gets to it: given up as expired, never sent.
    const stale = await holder('stale');
    skew = 31 * 60_000;
    const refused = await holder('refused');
    const flaky = await holder('flaky');
    gw.gateway.startBackground();

    const gaveUp = (row: Record<string, unknown>) => row.failed_at !== null;
    const rows = {
      stale: await outboxRow(stale.email, gaveUp),
      refused: await outboxRow(refused.email, gaveUp),
      flaky: await outboxRow(flaky.email, gaveUp),
    };
    expect(String(rows.stale.last_error)).toMatch(/expired/);
    expect(String(rows.refused.last_error)).toMatch(/550/);
    expect(String(rows.refused.last_error)).not.toMatch(/^(\d{3}) \1\b/); // the code once
    expect([Number(rows.flaky.attempts), String(rows.flaky.last_error)]).toEqual([2, expect.stringMatching(/451/)]);

    for (const [name, row] of Object.entries(rows))
      expect([row.text_body, row.html_body], `${name}: the given-up message's bodies`).toEqual(['', '']);
    for (const { email, token, password } of [stale, refused, flaky]) {
      expectError(
        await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: 'attacker chosen pw' } }),
        400,
        /invalid, was already used or has expired/,
      );
      // The holder's password is what it was.
      await signIn(gw, email, password);
    }
  });
});
