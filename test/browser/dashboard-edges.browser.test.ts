/**
 * The dashboard at its edges, in Debian's Chromium (each a defect found by driving the built
 * dashboard as a holder would, with a test that failed before):
 * - the OAuth approval page passes on, and shows, the limit reset and the expiry an app asks for
 *   (the issued key had neither: a lifetime limit that never expired);
 * - a page whose session was replaced in another tab (sign out, sign in again) can still act: its
 *   CSRF token is read again (every change, sign-out included, was refused until a reload);
 * - `?next=` with a tab or line break (`/\t/evil.example/`, which the browser reads as `//evil…`) or
 *   an API path lands on /keys (it left a blank page);
 * - Activity's key filter lists every key, past the first page of 100;
 * - an emptied low-balance threshold saves (back to the operator's default);
 * - a long name without spaces does not widen the keys or apps table past the screen;
 * - a balance is shown to its last digit, never rounded up to the next cent;
 * - a rate-limit message names its wait once;
 * - a key's limit and its reset can be changed on the page (they could only be set at creation), and
 *   a key reported compromised says so, without an Enable button that could only fail;
 * - the keys page keeps the keyboard's focus: into the new key's form, onto the key shown once, back
 *   to the button that opened a form or a confirmation (Escape closes both), to the heading after a
 *   delete (each of them left the focus on the page's body);
 * - a signed-out page load logs no error in the console (the session probe was a 401, which the
 *   browser logs as a failed request on every page); against a gateway from before the probe's
 *   route (a rolling deploy: 404), the dashboard reads `GET /session` as it used to;
 * - "Show older generations" continues after the last row shown (by offset, a generation made
 *   meanwhile repeated a row);
 * - at phone width, a long balance, a long credit reference or a long app or model name stays inside
 *   the screen (stat cards clipped, the credits and rankings tables widened the page);
 * - a tab whose session another tab of the browser replaced (sign out, sign in as someone else)
 *   follows: it showed the new account's keys and credits under the old account's e-mail;
 * - at 1280 px the keys and generations tables fit the page (columns were cut off past the edge).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { asBrowser, createHolder, signIn } from '../helpers/session.js';
import { call } from '../helpers/api.js';
import { sqliteTarget } from '../helpers/store-targets.js';
import { chromiumAvailable, focusedElement, launchChromium, newPage, signInThroughPage } from './chromium.js';

const BUILT = existsSync(fileURLToPath(new URL('../../dist/web/index.html', import.meta.url)));
const HELLO = { model: 'test/chat', messages: [{ role: 'user', content: 'Hello' }] };
/** As long as a page's own waits (newPage's 15 s): a loaded machine may take a while to render. */
const PATIENT = { timeout: 15_000 };
const LONG_MODEL = `test/${'long-model-identifier'.repeat(4)}`;

describe.skipIf(!chromiumAvailable)('dashboard edges in Chromium', () => {
  let gw: TestGateway;
  let browser: Browser;
  const open: { close(): Promise<void> }[] = [];
  const problems: string[][] = [];

  async function page(viewport?: { width: number; height: number }) {
    const created = await newPage(browser, gw.url, viewport);
    open.push(created.context);
    problems.push(created.problems);
    return created;
  }

  async function signedIn(holder: { email: string; password: string }, path = '/'): Promise<Page> {
    const { page: p } = await page();
    await p.goto(path);
    await signInThroughPage(p, holder.email, holder.password);
    return p;
  }

  beforeAll(async () => {
    if (!BUILT) throw new Error('dist/web/index.html is missing: run `npm run build` before the browser tests');
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        // The rankings page lists the app of one account (the default asks for three).
        Object.assign(file, { rankings: { min_accounts: 1 } });
        const chat = (file.models as { id: string }[]).find((m) => m.id === 'test/chat')!;
        file.models.push({ ...chat, id: LONG_MODEL, name: 'A model with a long id' });
      },
    });
    browser = await launchChromium();
  }, 60_000);

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    expect(problems.splice(0).flat()).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  it('the OAuth approval passes on the limit reset and expiry the app asks for, and shows them', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const expires = new Date(Date.now() + 30 * 86_400_000);
    expires.setUTCMilliseconds(0);
    const callbackUrl = 'http://localhost:9/callback';
    const search = new URLSearchParams({
      callback_url: callbackUrl,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      limit: '2',
      usage_limit_type: 'daily',
      expires_at: expires.toISOString(),
      state: 'app-state-7f3a',
      key_label: 'Tollgate Official CLI',
    });
    const p = await signedIn(holder, `/auth?${search.toString()}`);
    // The heading names where the key goes (the callback's origin), never a label the app chose.
    await p.getByRole('heading', { name: 'Authorize http://localhost:9', exact: true }).waitFor();
    await p.getByText('The credit limit resets every day').waitFor();
    // With the limit emptied, the reset is the app's term for a limit the holder may still set.
    const limitField = p.getByLabel('Credit limit for this app (USD, optional)');
    await limitField.fill('');
    await p.getByText('A credit limit you set here resets every day').waitFor();
    await limitField.fill('2');
    await p.getByText(`The key expires ${expires.toISOString().slice(0, 16).replace('T', ' ')} UTC`).waitFor();
    // Nothing listens on the callback port: the approval's redirect is read from the request, not followed.
    const redirect = p.waitForRequest((request) => request.url().startsWith(callbackUrl));
    await p.getByRole('button', { name: 'Approve' }).click();
    const back = new URL((await redirect).url()).searchParams;
    const code = back.get('code');
    expect(code).toBeTruthy();
    expect(back.get('state')).toBe('app-state-7f3a'); // the app's state, given back
    const exchanged = await fetch(`${gw.api}/auth/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code, code_verifier: verifier, code_challenge_method: 'S256' }),
    });
    expect(exchanged.status).toBe(200);
    const { key } = (await exchanged.json()) as { key: string };
    const current = await fetch(`${gw.api}/key`, { headers: { authorization: `Bearer ${key}` } });
    const data = ((await current.json()) as { data: Record<string, unknown> }).data;
    expect(data).toMatchObject({ limit: 2, limit_reset: 'daily', expires_at: expires.toISOString() });
    // The Apps page states the same terms: a daily limit does not read as a total. (In a tab of its
    // own: the approval's tab is still navigating to the callback nothing listens on.)
    const apps = await p.context().newPage();
    await apps.goto('/apps');
    const appRow = apps.getByRole('row').filter({ has: apps.getByRole('button', { name: /^Revoke / }) });
    await appRow.waitFor();
    expect(await appRow.textContent()).toContain('$2.00 per day');
    // Keys names the moment the app's key stops, not a day (an expiry at 00:00 named the day after
    // its last; the dashboard's own keys run to their day's end and show the day).
    await apps.goto('/keys');
    const keyRow = apps.getByRole('row').filter({ hasText: 'Tollgate Official CLI' });
    await keyRow.waitFor();
    expect(await keyRow.textContent()).toContain(`${expires.toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  });

  it('an app approved twice: Apps names each row by its key, and revoking one says the other keeps working', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const owner = await gw.createKey(holder.id, { name: 'owner' });
    const appKeys: string[] = [];
    for (let i = 0; i < 2; i++) {
      const code = await call(gw, 'POST', '/auth/keys/code', {
        key: owner.key,
        json: { callback_url: 'https://twice.example/cb' },
      });
      expect(code.status, code.text).toBe(200);
      const exchanged = await call(gw, 'POST', '/auth/keys', { json: { code: code.json.data.id } });
      expect(exchanged.status, exchanged.text).toBe(200);
      appKeys.push(exchanged.json.key as string);
    }
    const p = await signedIn(holder, '/apps');
    const revokeButtons = p.getByRole('button', { name: /^Revoke https:\/\/twice\.example \(key sk-tg-v1-/ });
    await expect.poll(() => revokeButtons.count(), PATIENT).toBe(2);
    const names = await revokeButtons.evaluateAll((buttons) => buttons.map((b) => b.getAttribute('aria-label')));
    expect(new Set(names).size).toBe(2);
    await revokeButtons.first().click();
    const dialog = p.getByRole('alertdialog');
    expect(await dialog.textContent()).toContain('The app holds another key from another approval');
    expect(await dialog.textContent()).not.toContain('can no longer use your credits');
    await dialog.getByRole('button', { name: 'Revoke access' }).click();
    await expect.poll(() => revokeButtons.count()).toBe(0);
    // One row left: it is the app's only authorization now, and says so.
    await p.getByRole('button', { name: 'Revoke https://twice.example', exact: true }).click();
    expect(await p.getByRole('alertdialog').textContent()).toContain('the app can no longer use your credits');
    const working = await Promise.all(appKeys.map(async (key) => (await chat(gw, key, HELLO)).status));
    expect(working.sort()).toEqual([200, 401]);
  });

  it('signed out, a page load logs no error in the console', async () => {
    const { page: p } = await page();
    const errors: string[] = [];
    p.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    for (const [path, heading] of [
      ['/signin', 'Sign in'],
      ['/forgot-password', 'Reset your password'],
      ['/keys', 'Sign in'],
    ] as const) {
      await p.goto(path);
      await p.getByRole('heading', { name: heading }).waitFor(PATIENT);
      // A visit's first page, redirected or not, keeps the browser's start (the skip link first):
      // nothing had the focus, so nothing is moved to the heading.
      expect((await focusedElement(p)).name, path).toMatch(/^body:/);
    }
    expect(errors).toEqual([]);
  });

  it('without mail.public_url, "Forgot your password?" says to ask the operator, and offers no form that cannot work', async () => {
    const { page: p } = await page();
    await p.goto('/forgot-password');
    await p.getByText('Password reset by e-mail is not set up on this gateway').waitFor(PATIENT);
    expect(await p.getByLabel('E-mail').count()).toBe(0);
    expect(await p.getByRole('button', { name: 'Send reset link' }).count()).toBe(0);
  });

  it("the OAuth approval at phone width: an app's long origin in the heading wraps, nothing is wider than the phone", async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const origin = 'https://a-rather-long-application-name.integrations.example.com';
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto(`/auth?${new URLSearchParams({ callback_url: `${origin}/oauth/callback` }).toString()}`);
    await signInThroughPage(p, holder.email, holder.password);
    await p.getByRole('heading', { name: `Authorize ${origin}`, exact: true }).waitFor(PATIENT);
    await p.getByLabel('Credit limit for this app (USD, optional)').waitFor();
    const overflow = await p.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
  });

  it('Activity shows no figures before its data is known: "…" while loading, "—" when unreachable, never zeros and empty charts', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const p = await signedIn(holder, '/keys');
    await p.getByRole('heading', { name: 'API keys' }).waitFor(PATIENT);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    await p.route('**/api/v1/activity/daily*', async (route) => {
      await held;
      await route.continue();
    });
    await p.getByRole('link', { name: 'Activity' }).click();
    await p.getByText('Loading activity…').waitFor();
    expect(await p.locator('.stats dd').allTextContents()).toEqual(['…', '…', '…']);
    expect(await p.getByText('No activity').count()).toBe(0);
    release();
    await expect.poll(async () => (await p.locator('.stats dd').first().textContent()) ?? '').toMatch(/^\$/);
    await p.unrouteAll();
    // Unreachable: the error, and no zeros under it.
    await p.route('**/api/v1/activity/daily*', (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 503, message: 'Storage is unavailable' } }),
      }),
    );
    // A filter changed and its load failed: the last figures were another selection's.
    await p.getByLabel('Group by').selectOption('app');
    await p.getByText('Could not load daily activity').waitFor(PATIENT);
    expect(await p.locator('.stats dd').allTextContents()).toEqual(['—', '—', '—']);
    expect(await p.locator('.chart').count()).toBe(0);
    await p.reload();
    await p.getByText('Could not load daily activity').waitFor(PATIENT);
    expect(await p.locator('.stats dd').allTextContents()).toEqual(['—', '—', '—']);
    expect(await p.getByText('No activity').count()).toBe(0);
    expect(await p.getByText('$0.00').count()).toBe(0);
  });

  it('a long e-mail address wraps on Settings and is named whole in the header, at desktop and phone width', async () => {
    const email = `${'averyveryverylongmailboxname'.repeat(2)}.xx@subdomain.of.a.very.long.example-domain-name.example.com`;
    const password = 'a long demo password 123';
    expect((await gw.admin('POST', '/accounts', { email, password })).status).toBe(201);
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const { page: p } = await page(viewport);
      await p.goto('/settings');
      await signInThroughPage(p, email, password);
      await p.getByText(`Signed in as ${email}.`).waitFor(PATIENT);
      const overflow = await p.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, `${viewport.width} px`).toBeLessThanOrEqual(0);
      if (viewport.width > 700) expect(await p.locator('.account-email').getAttribute('title')).toBe(email);
    }
  });

  it('a sign-in refused after a mouse click gives the keyboard focus back to the button, not to the page', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const { page: p } = await page();
    await p.goto('/signin');
    await signInThroughPage(p, holder.email, 'not the password at all');
    await p
      .getByRole('alert')
      .filter({ hasText: /password/i })
      .waitFor(PATIENT);
    await expect.poll(async () => (await focusedElement(p)).name).toBe('button:Sign in');
  });

  it('against a gateway without GET /session/status (an older process: 404), the holder stays signed in', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const { page: p } = await page();
    // The older process's answer, as it gives it for any route it does not have.
    await p.route('**/api/v1/session/status', (route) =>
      route.fulfill({
        status: 404,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 404, message: 'Not found' } }),
      }),
    );
    await p.goto('/signin');
    await p.getByRole('heading', { name: 'Sign in' }).waitFor(PATIENT);
    await signInThroughPage(p, holder.email, holder.password);
    await p.getByRole('button', { name: 'Sign out' }).waitFor(PATIENT);
    // A fresh load probes the session: through GET /session here.
    await p.goto('/keys');
    await p.getByRole('heading', { name: 'API keys' }).waitFor(PATIENT);
    expect(new URL(p.url()).pathname).toBe('/keys');
  });

  it('the keys page keeps the keyboard focus where the holder is working', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const focusKey = await gw.createKey(holder.id, { name: 'focus key' });
    const p = await signedIn(holder, '/keys');
    await p.getByRole('heading', { name: 'API keys' }).waitFor(PATIENT);
    const focused = async () => (await focusedElement(p)).name;

    await p.getByRole('button', { name: 'Create key', exact: true }).focus();
    await p.keyboard.press('Enter');
    await p.getByRole('heading', { name: 'Create a key' }).waitFor();
    expect(await focused()).toBe('input:name');
    await p.keyboard.press('Escape');
    await p.getByRole('heading', { name: 'Create a key' }).waitFor({ state: 'detached' });
    expect(await focused()).toBe('button:Create key');

    await p.keyboard.press('Enter');
    await p.keyboard.type('keyboard key');
    await p.keyboard.press('Enter');
    await p.getByRole('heading', { name: 'Key “keyboard key” created' }).waitFor();
    expect((await focusedElement(p)).value).toMatch(/^sk-tg-v1-/);
    await p.getByRole('button', { name: 'Done' }).click();
    await p.getByRole('button', { name: 'Create key', exact: true }).waitFor();
    expect(await focused()).toBe('button:Create key');

    await p.getByRole('button', { name: 'Rename focus key' }).click();
    await p.keyboard.press('Escape');
    await p.getByRole('button', { name: 'Save name' }).waitFor({ state: 'detached' });
    expect(await focused()).toBe('button:Rename focus key');

    // Disable/Enable keeps it through its change (the button is disabled while the change runs).
    await p.getByRole('button', { name: 'Disable focus key' }).focus();
    await p.keyboard.press('Enter');
    await p.getByRole('button', { name: 'Enable focus key' }).waitFor();
    await expect.poll(focused).toBe('button:Enable focus key');

    await p.getByRole('button', { name: 'Delete focus key' }).click();
    expect(await focused()).toBe('button:Cancel');
    await p.keyboard.press('Escape');
    await p.getByRole('alertdialog').waitFor({ state: 'detached' });
    expect(await focused()).toBe('button:Delete focus key');

    // Deleted: the focus goes to the row that took its place, else the one above (the page does not
    // jump to its top), and to the heading when no key is left — as the list is once read again.
    // Newest first: newest, extra, keyboard, focus.
    await gw.createKey(holder.id, { name: 'extra key' });
    await gw.createKey(holder.id, { name: 'newest key' });
    await p.reload();
    await p.getByRole('row', { name: 'Key newest key' }).waitFor(PATIENT);
    const remove = async (name: string) => {
      await p.getByRole('button', { name: `Delete ${name}` }).focus();
      await p.keyboard.press('Enter');
      await p.getByRole('alertdialog').getByRole('button', { name: 'Delete key' }).click();
      await p.getByRole('row', { name: `Key ${name}` }).waitFor({ state: 'detached' });
    };
    await remove('keyboard key');
    await expect.poll(focused).toBe('tr:Key focus key');
    // The row below was deleted elsewhere meanwhile (the page still lists it): the focus goes to the
    // row that is there once the list is read again, never to the page's body.
    expect((await gw.admin('DELETE', `/keys/${focusKey.hash}`)).status).toBe(200);
    await remove('extra key');
    await expect.poll(focused).toBe('tr:Key newest key');
    await remove('newest key');
    expect(await focused()).toBe('h1:API keys');
  });

  it('one delete confirmation at a time: opening a second closes the first, and Delete deletes the key it names', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    await gw.createKey(holder.id, { name: 'first key' });
    await gw.createKey(holder.id, { name: 'second key' });
    const p = await signedIn(holder, '/keys');
    await p.getByRole('heading', { name: 'API keys' }).waitFor(PATIENT);
    await p.getByRole('button', { name: 'Delete first key' }).click();
    await p.getByRole('alertdialog', { name: 'Delete key “first key”?' }).waitFor();
    await p.getByRole('button', { name: 'Delete second key' }).click();
    await p.getByRole('alertdialog', { name: 'Delete key “second key”?' }).waitFor();
    expect(await p.getByRole('alertdialog').count()).toBe(1);
    // The first row is back to its buttons; the focus stayed in the open confirmation.
    await p.getByRole('button', { name: 'Delete first key' }).waitFor();
    expect((await focusedElement(p)).name).toBe('button:Cancel');
    await p.getByRole('alertdialog').getByRole('button', { name: 'Delete key' }).click();
    await p.getByRole('row', { name: 'Key second key' }).waitFor({ state: 'detached' });
    await p.getByRole('row', { name: 'Key first key' }).waitFor();
  });

  it('a page whose session was replaced in another tab still acts (its CSRF token is read again)', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    await gw.createKey(holder.id, { name: 'tab key' });
    const first = await signedIn(holder, '/keys');
    await first.getByRole('heading', { name: 'API keys' }).waitFor();
    // Another tab of the same browser signs out and in again: a new session, a new CSRF token.
    const second = await first.context().newPage();
    problems.push([]);
    await second.goto('/keys');
    await second.getByRole('heading', { name: 'API keys' }).waitFor();
    await second.getByRole('button', { name: 'Sign out' }).click();
    await signInThroughPage(second, holder.email, holder.password);
    await second.getByRole('heading', { name: 'API keys' }).waitFor();

    await first.getByRole('button', { name: 'Disable tab key' }).click();
    await first.getByRole('button', { name: 'Enable tab key' }).waitFor();
    await first.getByRole('button', { name: 'Sign out' }).click();
    await first.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await first.getByRole('alert').count()).toBe(0);
  });

  it('?next= that the browser reads as another host, or an API path, lands on /keys', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    for (const next of ['%2F%09%2Fevil.example%2F', '%2F%0A%2Fevil.example%2F', '%2Fapi%2Fv1%2Fkeys']) {
      const { page: p, context } = await page();
      await p.goto(`/signin?next=${next}`);
      await signInThroughPage(p, holder.email, holder.password);
      await p.getByRole('heading', { name: 'API keys' }).waitFor();
      expect(new URL(p.url()).pathname, next).toBe('/keys');
      await context.close();
    }
  });

  it("Activity's key filter lists every key, beyond the first 100", async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const { key } = await gw.createKey(holder.id, { name: 'the oldest key' });
    expect((await chat(gw, key, HELLO)).status).toBe(200);
    for (let i = 0; i < 104; i++) await gw.createKey(holder.id, { name: `bulk ${i}` });
    const p = await signedIn(holder, '/activity');
    const filter = p.getByLabel('Key', { exact: true });
    await expect.poll(() => filter.locator('option').count(), PATIENT).toBe(106);
    const oldest = await filter.locator('option', { hasText: 'the oldest key' }).getAttribute('value');
    await filter.selectOption(oldest!);
    // Filtered to that key: its one request.
    const requests = p.getByLabel('Last 30 days').locator('div', { hasText: 'Requests' }).locator('dd');
    await expect.poll(() => requests.textContent(), PATIENT).toBe('1');
  });

  it('an emptied low-balance threshold saves, back to the default', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const session = await signIn(gw, holder.email, holder.password);
    const set = await asBrowser(gw, session, 'PATCH', '/account/notifications', {
      json: { low_balance: { threshold: 7 } },
    });
    expect(set.status, set.text).toBe(200);
    const p = await signedIn(holder, '/settings');
    const field = p.getByLabel('Low-balance threshold (USD)');
    await expect.poll(() => field.inputValue(), PATIENT).toBe('7');
    await field.fill('');
    await p.getByRole('button', { name: 'Save notification settings' }).click();
    await p.getByText('Notification settings saved.').waitFor();
    expect(await p.getByRole('alert').count()).toBe(0);
    const after = await asBrowser(gw, session, 'GET', '/account/notifications');
    expect(after.json.data.low_balance.threshold).not.toBe(7);
  });

  it('long names wrap inside the keys table; a balance shows every digit; a wait is named once', async () => {
    const holder = await createHolder(gw, 'a long demo password 123', 10);
    const { key } = await gw.createKey(holder.id, { name: 'x'.repeat(200) });
    expect((await chat(gw, key, HELLO)).status).toBe(200);
    const p = await signedIn(holder, '/keys');
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    const widths = (await p.evaluate(
      `({ page: document.documentElement.scrollWidth, table: document.querySelector('table')?.scrollWidth ?? 0, viewport: window.innerWidth })`,
    )) as { page: number; table: number; viewport: number };
    expect(widths.table).toBeLessThanOrEqual(widths.viewport);
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);

    const account = await fetch(`${gw.api}/key`, { headers: { authorization: `Bearer ${key}` } });
    const usage = ((await account.json()) as { data: { usage: number } }).data.usage;
    expect(usage).toBeGreaterThan(0);
    await p.goto('/credits');
    const balance = (10 - usage).toFixed(9).replace(/0+$/, '');
    await p.getByText(`$${balance}`).first().waitFor();

    // Sign-in attempts past the limit: 429 with Retry-After; the message names the wait once.
    const { page: q } = await page();
    await q.goto('/signin');
    let text = '';
    for (let i = 0; i < 12 && !/try again/i.test(text); i++) {
      await q.getByLabel('E-mail').fill(holder.email);
      await q.getByLabel('Password').fill(`wrong password ${i}`);
      await q.getByRole('button', { name: 'Sign in' }).click();
      await q.getByRole('alert').waitFor();
      text = (await q.getByRole('alert').textContent()) ?? '';
    }
    expect(text).toMatch(/try again/i);
    expect(text.match(/try again/gi)).toHaveLength(1);
  });

  it("a key's limit is changed on the page; a compromised key says so and offers no Enable", async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    await gw.createKey(holder.id, { name: 'limited key' });
    const leaked = await gw.createKey(holder.id, { name: 'leaked key' });
    expect((await gw.admin('POST', `/keys/${leaked.hash}/compromised`, {})).status).toBe(200);
    const p = await signedIn(holder, '/keys');
    const row = p.getByRole('row', { name: 'Key limited key' });
    await row.getByRole('button', { name: 'Change the limit of limited key' }).click();
    await row.getByLabel('Credit limit for limited key (USD; blank: no limit)').fill('4');
    await row.getByLabel('Limit resets').selectOption('weekly');
    await row.getByRole('button', { name: 'Save limit' }).click();
    await row.getByText('$4.00 per week, $4.00 left').waitFor();
    await row.getByRole('button', { name: 'Change the limit of limited key' }).click();
    await row.getByLabel('Credit limit for limited key (USD; blank: no limit)').fill('');
    await row.getByRole('button', { name: 'Save limit' }).click();
    await row.getByText('No limit').waitFor();

    const leakedRow = p.getByRole('row', { name: 'Key leaked key' });
    await leakedRow.getByText('Compromised').waitFor();
    expect(await leakedRow.getByRole('button', { name: /^Enable / }).count()).toBe(0);
    // It never calls a model again: no credit limit is offered for it either.
    expect(await leakedRow.getByRole('button', { name: /^Change the limit/ }).count()).toBe(0);
  });

  it('limits below a cent are entered as the API takes them: a new key, and a reset change of one', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    await gw.createKey(holder.id, { name: 'tiny key', limit: 0.0002, limit_reset: 'daily' });
    const p = await signedIn(holder, '/keys');
    // Only the reset changes; the limit field keeps its 0.0002.
    const row = p.getByRole('row', { name: 'Key tiny key' });
    await row.getByRole('button', { name: 'Change the limit of tiny key' }).click();
    await row.getByLabel('Limit resets').selectOption('monthly');
    await row.getByRole('button', { name: 'Save limit' }).click();
    await row.getByText('$0.0002 per month', { exact: false }).first().waitFor();
    const keyNamed = async (name: string) =>
      ((await gw.admin('GET', `/accounts/${holder.id}/keys`)).json.data as { name: string }[]).find(
        (k) => k.name === name,
      );
    expect(await keyNamed('tiny key')).toMatchObject({ limit: 0.0002, limit_reset: 'monthly' });

    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('sub-cent key');
    await p.getByLabel('Credit limit (USD, optional)').fill('0.000001');
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('API key').waitFor();
    expect(await keyNamed('sub-cent key')).toMatchObject({ limit: 0.000001 });
  });

  it('the new password counts characters as the server does, and the focus comes back to Change password', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    const p = await signedIn(holder, '/settings');
    await p.getByLabel('Current password').fill('a long demo password 123');
    // Five emoji are ten UTF-16 units but five characters: refused on the page, nothing sent.
    await p.getByLabel(/^New password/).fill('🔑'.repeat(5));
    await p.getByLabel('Repeat the new password').fill('🔑'.repeat(5));
    await p.getByRole('button', { name: 'Change password' }).click();
    await p.getByText('The new password must be 10 to 256 characters long').waitFor();
    // A wrong current password: the server's answer, and the focus back on the button.
    await p.getByLabel('Current password').fill('not the password at all');
    await p.getByLabel(/^New password/).fill('🔑'.repeat(12));
    await p.getByLabel('Repeat the new password').fill('🔑'.repeat(12));
    await p.getByRole('button', { name: 'Change password' }).click();
    // In words, with no API field name in front.
    await p
      .getByRole('alert')
      .filter({ hasText: /^The current password is not correct$/ })
      .waitFor();
    await expect.poll(async () => (await focusedElement(p)).name).toBe('button:Change password');
  });

  it('Show older generations continues after the last row shown, with a generation made meanwhile', async () => {
    const holder = await createHolder(gw, 'a long demo password 123', 10);
    const { key } = await gw.createKey(holder.id, { name: 'busy key' });
    for (let i = 0; i < 51; i++) expect((await chat(gw, key, HELLO)).status).toBe(200);
    const p = await signedIn(holder, '/activity');
    const ids = p
      .getByRole('table', { name: 'Recent generations, newest first' })
      .locator('td[data-label="Generation id"]');
    await expect.poll(() => ids.count(), PATIENT).toBe(50);
    expect((await chat(gw, key, HELLO)).status).toBe(200); // while the holder reads the first page
    // With the keyboard: the button is disabled while the page loads; the focus is not lost to the
    // body — no older page is left, so it goes to the first row the load added.
    await p.getByRole('button', { name: 'Show older generations' }).focus();
    await p.keyboard.press('Enter');
    await expect.poll(() => ids.count(), PATIENT).toBe(51);
    const shown = await ids.allTextContents();
    expect(new Set(shown).size).toBe(51);
    await expect.poll(async () => (await focusedElement(p)).name).toContain(shown[50]!);
    expect((await focusedElement(p)).name).toMatch(/^tr:/);
  });

  it('the keyboard focus is never left on the body: a failed save, "Try again", a tab reached at phone width', async () => {
    const holder = await createHolder(gw, 'a long demo password 123');
    await gw.createKey(holder.id, { name: 'kept key' });
    const p = await signedIn(holder, '/keys');
    await p.getByRole('row', { name: 'Key kept key' }).waitFor(PATIENT);
    const focused = async () => (await focusedElement(p)).name;
    // A rename the gateway fails: the pressed "Save name" gets the focus back with the error shown.
    await p.route('**/api/v1/keys/*', (route) =>
      route.request().method() === 'PATCH'
        ? route.fulfill({
            status: 500,
            contentType: 'application/json',
            body: '{"error":{"code":500,"message":"boom"}}',
          })
        : route.fallback(),
    );
    await p.getByRole('button', { name: 'Rename kept key' }).click();
    await p.getByRole('button', { name: 'Save name' }).focus();
    await p.keyboard.press('Enter');
    await p.getByRole('alert').filter({ hasText: 'boom' }).waitFor();
    await expect.poll(focused).toBe('button:Save name');
    await p.unroute('**/api/v1/keys/*');
    await p.keyboard.press('Escape');

    // Someone who moved on while a request ran keeps the focus when it fails: typing into the name
    // after pressing "Create key" stays in the field (the button took the focus back, and the next
    // space pressed it: a second key, half named — review).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await p.route('**/api/v1/keys', async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      await held;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: '{"error":{"code":503,"message":"busy"}}',
      });
    });
    await p.getByRole('button', { name: 'Create key', exact: true }).click();
    await p.getByLabel('Name', { exact: true }).fill('ci');
    await p.getByRole('button', { name: 'Create key', exact: true }).click();
    await p.getByLabel('Name', { exact: true }).focus();
    await p.keyboard.type('-deploy');
    release();
    await p.getByRole('alert').filter({ hasText: 'busy' }).waitFor();
    await p.keyboard.type(' key');
    expect(await p.getByLabel('Name', { exact: true }).inputValue()).toBe('ci-deploy key');
    expect(await focused()).toBe('input:name');
    await p.unroute('**/api/v1/keys');
    await p.keyboard.press('Escape');

    // The list failing to load, then "Try again" working: the focus goes to the heading.
    await p.route('**/api/v1/keys?*', (route) =>
      route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":{"code":503,"message":"down"}}' }),
    );
    await p.reload();
    const retry = p.getByRole('button', { name: 'Try again' });
    await retry.waitFor(PATIENT);
    await p.unroute('**/api/v1/keys?*');
    await retry.focus();
    await p.keyboard.press('Enter');
    await p.getByRole('row', { name: 'Key kept key' }).waitFor(PATIENT);
    await expect.poll(focused).toBe('h1:API keys');

    // At 390 px the tab bar scrolls to the tab the keyboard reached.
    await p.setViewportSize({ width: 390, height: 844 });
    await p.getByRole('link', { name: 'Rankings' }).focus();
    await expect
      .poll(() =>
        p.evaluate(`(() => {
          const box = document.activeElement.getBoundingClientRect();
          return box.left >= 0 && box.right <= window.innerWidth;
        })()`),
      )
      .toBe(true);
  });

  it('at phone width a long balance, credit reference, app or model name stays inside the screen', async () => {
    const holder = await createHolder(gw, 'a long demo password 123', 10);
    const reference = `invoice-${'7'.repeat(90)}`;
    const credit = await gw.admin('POST', `/accounts/${holder.id}/credits`, {
      amount: 987_654_321.123456,
      kind: 'purchase',
      reference,
    });
    expect(credit.status, JSON.stringify(credit.json)).toBe(201);
    const { key } = await gw.createKey(holder.id, { name: 'phone key' });
    const longApp = { 'HTTP-Referer': `https://${'a'.repeat(60)}.example/`, 'X-Title': 'T'.repeat(80) };
    expect((await chat(gw, key, { ...HELLO, model: LONG_MODEL }, longApp)).status).toBe(200);
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto('/credits');
    await signInThroughPage(p, holder.email, holder.password);
    await p.getByText(reference).waitFor();
    const overflow = () =>
      p.evaluate(`({
        page: document.documentElement.scrollWidth - window.innerWidth,
        clipped: [...document.querySelectorAll('.stats dd, td, th')]
          .filter((e) => e.scrollWidth > e.clientWidth + 1)
          .map((e) => e.textContent),
      })`) as Promise<{ page: number; clipped: string[] }>;
    expect(await overflow()).toEqual({ page: 0, clipped: [] });
    await p.goto('/rankings');
    await p.getByRole('table', { name: 'Top apps by tokens' }).getByText('T'.repeat(80)).waitFor();
    await p.getByRole('table', { name: 'Top models by tokens' }).getByText(LONG_MODEL).waitFor();
    expect(await overflow()).toEqual({ page: 0, clipped: [] });
  });

  it('a tab whose session another tab replaced shows the new account, never its data under the old name', async () => {
    const alice = await createHolder(gw, 'a long demo password 123');
    const bob = await createHolder(gw, 'a long demo password 456');
    await gw.createKey(alice.id, { name: 'alice key' });
    await gw.createKey(bob.id, { name: 'bob key' });
    const { page: a, context } = await page();
    await a.goto('/keys');
    await signInThroughPage(a, alice.email, alice.password);
    await a.getByText('alice key').waitFor();
    const b = await context.newPage();
    await b.goto('/keys');
    await b.getByText('alice key').waitFor();
    await b.getByRole('button', { name: 'Sign out' }).click();
    await b.goto('/signin');
    await signInThroughPage(b, bob.email, bob.password);
    await b.getByText('bob key').waitFor();
    // Tab A follows: Bob's name with Bob's keys, and never Alice's name over Bob's data.
    await a.getByText(bob.email).waitFor(PATIENT);
    await a.getByText('bob key').waitFor(PATIENT);
    expect(await a.getByText('alice key').count()).toBe(0);
    await a.getByRole('link', { name: 'Credits' }).click();
    await a.getByRole('heading', { name: 'Credits' }).waitFor();
    expect(await a.getByText(alice.email).count()).toBe(0);
    // Signed out in B: A says so.
    await b.getByRole('button', { name: 'Sign out' }).click();
    await a.getByRole('heading', { name: 'Sign in' }).waitFor(PATIENT);
    // Both signed in again; "Sign out everywhere" in B: A says so too, without waiting for a 401.
    await signInThroughPage(b, bob.email, bob.password);
    await a.getByText(bob.email).waitFor(PATIENT);
    await b.getByRole('link', { name: 'Settings' }).click();
    await b.getByRole('button', { name: 'Sign out everywhere' }).click();
    await b.getByRole('heading', { name: 'Sign in' }).waitFor();
    await a.getByRole('heading', { name: 'Sign in' }).waitFor(PATIENT);
  });

  it('at 1280 px the keys and generations tables fit their page: no column cut, no button squeezed', async () => {
    const holder = await createHolder(gw, 'a long demo password 123', 10);
    const { key } = await gw.createKey(holder.id, { name: 'everyday key', limit: 5, limit_reset: 'daily' });
    expect((await chat(gw, key, HELLO, { 'HTTP-Referer': 'https://chat.my-company.example/' })).status).toBe(200);
    for (const name of ['leaked one', 'leaked two']) {
      const leaked = await gw.createKey(holder.id, { name });
      expect((await gw.admin('POST', `/keys/${leaked.hash}/compromised`, {})).status).toBe(200);
    }
    const p = await signedIn(holder, '/keys');
    await p.getByText('everyday key').waitFor();
    const overflow = () =>
      p.evaluate(`[...document.querySelectorAll('table')].map((t) => ({
        table: t.getAttribute('aria-label') ?? t.querySelector('caption')?.textContent ?? '',
        over: t.getBoundingClientRect().right - (t.closest('.table-scroll') ?? document.querySelector('main')).getBoundingClientRect().right,
        squeezed: [...t.querySelectorAll('button')].filter((b) => b.scrollWidth > b.clientWidth + 1).map((b) => b.textContent),
      })).filter((t) => t.over > 1 || t.squeezed.length > 0)`) as Promise<unknown[]>;
    expect(await overflow()).toEqual([]);
    await p.getByRole('link', { name: 'Activity' }).click();
    await p.getByRole('table', { name: 'Recent generations, newest first' }).waitFor();
    expect(await overflow()).toEqual([]);
  });
});
