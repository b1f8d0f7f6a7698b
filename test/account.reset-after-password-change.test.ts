/**
 * A password change made any other way — the holder in the dashboard (`POST /account/password`), the
 * operator (`PUT /admin/accounts/{id}/password`) — voids the reset links mailed before it, as a
 * redeemed reset does: a link in the mailbox (or in the hands of whoever read it) must not override
 * the password chosen since and end every session. The old link gets 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, createHolder, signIn } from './helpers/session.js';
import { startInbox, type Inbox, type ReceivedMail } from './helpers/smtp-inbox.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('reset links and a password changed since', { timeout: 60_000 }, () => {
  let inbox: Inbox;
  let gw: TestGateway;

  beforeAll(async () => {
    inbox = await startInbox();
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_SMTP_URL: inbox.url },
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

  async function resetTokenFor(email: string): Promise<string> {
    expect((await call(gw, 'POST', '/password-reset', { json: { email } })).status).toBe(202);
    let mail: ReceivedMail | undefined;
    for (let i = 0; i < 200 && !mail; i++) {
      mail = inbox.messages.find((m) => m.to.includes(email));
      if (!mail) await new Promise((r) => setTimeout(r, 50));
    }
    expect(mail, 'the reset mail arrived').toBeDefined();
    return /reset-password\?token=([A-Za-z0-9_-]{43})/.exec(mail!.decoded)![1]!;
  }

  it('the holder changes the password in the dashboard: the earlier reset link no longer works', async () => {
    const holder = await createHolder(gw);
    const session = await signIn(gw, holder.email, holder.password);
    const token = await resetTokenFor(holder.email);

    const changed = await asBrowser(gw, session, 'POST', '/account/password', {
      json: { current_password: holder.password, new_password: 'the holder chose this one' },
    });
    expect(changed.status, changed.text).toBe(200);

    expectError(
      await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: 'set through old link' } }),
      400,
      /invalid, was already used or has expired/,
    );
    await signIn(gw, holder.email, 'the holder chose this one');
  });

  it('the operator sets the password: the earlier reset link no longer works', async () => {
    const holder = await createHolder(gw);
    const token = await resetTokenFor(holder.email);
    const set = await gw.admin('PUT' as 'POST', `/accounts/${holder.id}/password`, { password: 'operator chose this' });
    expect(set.status, JSON.stringify(set.json)).toBe(200);

    expectError(
      await call(gw, 'POST', '/password-reset/confirm', { json: { token, new_password: 'set through old link' } }),
      400,
      /invalid, was already used or has expired/,
    );
  });
});
