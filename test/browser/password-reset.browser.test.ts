/**
 * "Forgot your password?" in Debian's Chromium, with the mail going through a real SMTP server on
 * loopback: ask for a link on the sign-in page, open the link from the message, set a new password,
 * sign in with it; the old one no longer works.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/api.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createHolder } from '../helpers/session.js';
import { startInbox, type Inbox } from '../helpers/smtp-inbox.js';
import { sqliteTarget } from '../helpers/store-targets.js';
import { chromiumAvailable, launchChromium, newPage, screenshot, signInThroughPage } from './chromium.js';

const BUILT = existsSync(fileURLToPath(new URL('../../dist/web/index.html', import.meta.url)));
const NEW_PASSWORD = 'a fresh passphrase 456';

describe.skipIf(!chromiumAvailable)('password reset in Chromium', () => {
  let inbox: Inbox;
  let gw: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    if (!BUILT) throw new Error('dist/web/index.html is missing: run `npm run build` before the browser tests');
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
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await inbox?.close();
  });

  it('asks for a link from the sign-in page, sets a new password from the mailed link, signs in with it', async () => {
    const holder = await createHolder(gw, 'the old password 123');
    const { context, page, problems } = await newPage(browser, gw.url);
    try {
      await page.goto('/signin');
      await page.getByLabel('E-mail').fill(holder.email);
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
      // The address typed on the sign-in page is carried over.
      expect(await page.getByLabel('E-mail').inputValue()).toBe(holder.email);
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.getByRole('status').filter({ hasText: 'a link to set a new password is on its way' }).waitFor();
      // The message replaced the form (and its pressed button): it has the focus, not the page's body.
      await expect.poll(() => page.evaluate('document.activeElement.getAttribute("role")')).toBe('status');
      await screenshot(page, 'password-reset-sent');

      let mail = inbox.messages.find((m) => m.to.includes(holder.email));
      for (let i = 0; i < 200 && !mail; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        mail = inbox.messages.find((m) => m.to.includes(holder.email));
      }
      expect(mail, 'the reset mail arrived').toBeDefined();
      // The mail links to the configured public URL; the same page is served by this gateway.
      const token = /\/reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.decoded)![1]!;
      expect((await call(gw, 'POST', '/password-reset/check', { json: { token } })).json).toEqual({
        data: { valid: true },
      });
      await page.goto(`/reset-password?token=${token}`);
      await page.getByRole('heading', { name: 'Set a new password' }).waitFor();
      // Too long: refused on the page as typed, never cut to 256 and set (a password the holder does not know).
      await page.getByLabel('New password (10 to 256 characters)').fill('x'.repeat(300));
      await page.getByLabel('Repeat the new password').fill('x'.repeat(300));
      expect(await page.getByLabel('New password (10 to 256 characters)').inputValue()).toHaveLength(300);
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('alert').filter({ hasText: 'The new password must be 10 to 256 characters long' }).waitFor();
      await page.getByLabel('New password (10 to 256 characters)').fill(NEW_PASSWORD);
      await page.getByLabel('Repeat the new password').fill('not the same password');
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('alert').filter({ hasText: 'The two passwords differ.' }).waitFor();
      await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('status').filter({ hasText: 'Your password was changed' }).waitFor();
      // The used token is gone from the address bar (and the tab's history).
      expect(new URL(page.url()).search).toBe('');
      expect(page.url()).not.toContain(token);

      // The link worked once.
      const again = await call(gw, 'POST', '/password-reset/confirm', {
        json: { token, new_password: 'yet another password 789' },
      });
      expect(again.status).toBe(400);

      await page.getByRole('main').getByRole('link', { name: 'Sign in' }).click();
      await signInThroughPage(page, holder.email, NEW_PASSWORD);
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      // Signed out again, the sign-in page does not offer the address to whoever signs in next.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(await page.getByLabel('E-mail').inputValue()).toBe('');
      const old = await call(gw, 'POST', '/session', {
        json: { email: holder.email, password: 'the old password 123' },
      });
      expect(old.status).toBe(401);
      // Opened again, the used link says so at once: no form that takes a new password twice to refuse it.
      const checked = await call(gw, 'POST', '/password-reset/check', { json: { token } });
      expect(checked.json).toEqual({ data: { valid: false } });
      await page.goto(`/reset-password?token=${token}`);
      await page.getByRole('alert').filter({ hasText: 'This link was already used or has expired' }).waitFor();
      expect(await page.getByLabel('New password (10 to 256 characters)').count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a tab signed in as the account shows it signed out once the reset ended its sessions', async () => {
    const holder = await createHolder(gw, 'the old password 456');
    const { context, page, problems } = await newPage(browser, gw.url);
    try {
      await page.goto('/signin');
      await signInThroughPage(page, holder.email, holder.password);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      const asked = await call(gw, 'POST', '/password-reset', { json: { email: holder.email } });
      expect(asked.status).toBe(202);
      let mail = inbox.messages.find((m) => m.to.includes(holder.email));
      for (let i = 0; i < 200 && !mail; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        mail = inbox.messages.find((m) => m.to.includes(holder.email));
      }
      const token = /\/reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.decoded)![1]!;
      await page.goto(`/reset-password?token=${token}`);
      await page.getByLabel('New password (10 to 256 characters)').fill(NEW_PASSWORD);
      await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('status').filter({ hasText: 'Your password was changed' }).waitFor();
      // The header went on showing the account, with "Sign out", until the next click (outside check).
      await expect.poll(() => page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
