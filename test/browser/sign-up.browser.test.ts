/**
 * Sign-up in Debian's Chromium. Where the operator opened it (`accounts.signup: open`), the sign-in
 * page links to "Create an account": the page checks the password policy and the repeat, shows a
 * taken e-mail's 409 in words, and a new account lands signed in on the page it was going to — with
 * no credits. Where sign-up is closed (the default) the sign-in page offers no link and /signup says
 * to ask the operator.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/api.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createHolder } from '../helpers/session.js';
import { sqliteTarget } from '../helpers/store-targets.js';
import { chromiumAvailable, launchChromium, newPage, screenshot } from './chromium.js';

const BUILT = existsSync(fileURLToPath(new URL('../../dist/web/index.html', import.meta.url)));
const PASSWORD = 'a brand new passphrase';

describe.skipIf(!chromiumAvailable)('sign-up in Chromium', () => {
  let open: TestGateway;
  let closed: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    if (!BUILT) throw new Error('dist/web/index.html is missing: run `npm run build` before the browser tests');
    open = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file, { accounts: { signup: 'open' } }),
    });
    closed = await startTestGateway({ target: sqliteTarget });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await open?.close();
    await closed?.close();
  });

  it('open: from the sign-in page to a new account, signed in on the page it was going to', async () => {
    const taken = await createHolder(open, 'someone else entirely');
    const email = `new-${Date.now()}@example.test`;
    const { context, page, problems } = await newPage(browser, open.url);
    try {
      await page.goto('/credits');
      await page.waitForURL(/\/signin\?next=%2Fcredits$/);
      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.getByRole('heading', { name: 'Create an account' }).waitFor();
      expect(new URL(page.url()).search).toBe('?next=%2Fcredits');
      await screenshot(page, 'sign-up');
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, 'sign-up-phone');
      const overflow = await page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      expect(overflow).toBeLessThanOrEqual(0); // nothing wider than a phone
      await page.setViewportSize({ width: 1280, height: 800 });

      await page.getByLabel('E-mail').fill(taken.email);
      await page.getByLabel('Password (10 to 256 characters)').fill('too short');
      await page.getByLabel('Repeat the password').fill('too short');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('alert').filter({ hasText: 'must be 10 to 256 characters long' }).waitFor();
      await page.getByLabel('Password (10 to 256 characters)').fill(PASSWORD);
      await page.getByLabel('Repeat the password').fill('another passphrase');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('alert').filter({ hasText: 'The two passwords differ.' }).waitFor();
      await page.getByLabel('Repeat the password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('alert').filter({ hasText: 'An account with this e-mail already exists' }).waitFor();

      await page.getByLabel('E-mail').fill(email);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(/\/credits$/);
      await page.getByRole('heading', { name: 'Credits' }).waitFor();
      await page.getByText(email).first().waitFor();

      // The account exists with no credits, and its password signs in.
      const signedIn = await call(open, 'POST', '/session', { json: { email, password: PASSWORD } });
      expect(signedIn.status).toBe(200);
      const admin = await open.admin('GET', `/accounts/${signedIn.json.data.account.id as string}`);
      expect(admin.json.data).toMatchObject({ email, balance: 0 });
      // The 409 the page showed is the only failed request it made (console noise is not expected).
      expect(problems.filter((p) => !p.includes('409'))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('closed: no link on the sign-in page, and /signup says to ask the operator', async () => {
    expect((await call(closed, 'GET', '/signup')).json).toEqual({ data: { open: false } });
    expect((await call(open, 'GET', '/signup')).json).toEqual({ data: { open: true } });
    const { context, page, problems } = await newPage(browser, closed.url);
    try {
      await page.goto('/signin');
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByRole('link', { name: 'Forgot your password?' }).waitFor();
      expect(await page.getByRole('link', { name: 'Create an account' }).count()).toBe(0);
      await page.goto('/signup');
      await page.getByRole('status').filter({ hasText: 'Sign-up is closed on this gateway' }).waitFor();
      expect(await page.getByRole('button', { name: 'Create account' }).count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
