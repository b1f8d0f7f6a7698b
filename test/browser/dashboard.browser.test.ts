/**
 * The dashboard as an account holder meets it, in Debian's Chromium: sign in, create a key and call
 * a model with it through the gateway (to the mock provider), see the call in Activity, rename,
 * disable (→ 401), delete; approve an app through OAuth with a real callback server and the real
 * SDK exchanging the code; the public rankings; phone width. `npm run screenshots` also writes
 * docs/screenshots/*.png from these runs.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OpenRouter } from '@openrouter/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chat, getJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createHolder } from '../helpers/session.js';
import { sqliteTarget } from '../helpers/store-targets.js';
import {
  chromiumAvailable,
  focusedElement,
  launchChromium,
  newPage,
  screenshot,
  signInThroughPage,
} from './chromium.js';

const BUILT = existsSync(fileURLToPath(new URL('../../dist/web/index.html', import.meta.url)));
const PATIENT = { timeout: 15_000 };
const HELLO = { model: 'test/chat', messages: [{ role: 'user', content: 'Hello from the dashboard test' }] };
const APP = { 'HTTP-Referer': 'https://dashboard-demo.example/', 'X-Title': 'Dashboard Demo' };

/** A loopback OAuth client: receives the redirect and answers a page saying so. */
async function startCallbackServer(): Promise<{ url: string; received: URLSearchParams[]; close(): Promise<void> }> {
  const received: URLSearchParams[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/callback') received.push(url.searchParams);
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>Demo app</title><h1>Back in the demo app</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/callback`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(!chromiumAvailable)('dashboard in Chromium', () => {
  let gw: TestGateway;
  let browser: Browser;
  let holder: { id: string; email: string; password: string };
  const open: { close(): Promise<void> }[] = [];
  const problems: string[][] = [];

  async function page(viewport?: { width: number; height: number }): Promise<Page> {
    const created = await newPage(browser, gw.url, viewport);
    open.push(created.context);
    problems.push(created.problems);
    return created.page;
  }

  async function signedInPage(viewport?: { width: number; height: number }): Promise<Page> {
    const p = await page(viewport);
    await p.goto('/');
    await signInThroughPage(p, holder.email, holder.password);
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    return p;
  }

  beforeAll(async () => {
    if (!BUILT) throw new Error('dist/web/index.html is missing: run `npm run build` before the browser tests');
    gw = await startTestGateway({
      target: sqliteTarget,
      // The rankings page lists the app of one account (the default asks for three).
      configure: (file) => Object.assign(file, { rankings: { min_accounts: 1 } }),
    });
    holder = await createHolder(gw, 'a long demo password 123', 25);
    browser = await launchChromium();
  }, 60_000);

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    // No uncaught error and no Content-Security-Policy refusal on any page of the test.
    expect(problems.splice(0).flat()).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  it('sign in, create a key, call a model with it, rename, disable (→ 401), enable, delete', async () => {
    const p = await page();
    await p.goto('/');
    // Signed out: the root sends the holder to the sign-in page. A wrong password is shown in words.
    await p.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshot(p, 'sign-in');
    await p.getByLabel('E-mail').fill(holder.email);
    await p.getByLabel('Password').fill('not the password at all');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => p.getByRole('alert').textContent()).toContain('Invalid e-mail or password');
    await p.getByLabel('Password').fill(holder.password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(new URL(p.url()).pathname).toBe('/keys');

    // Create: the full key shown once, read-only, labelled, with Copy and the warning.
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('ci server');
    await p.getByLabel('Credit limit (USD, optional)').fill('5');
    await p.getByLabel('Limit resets').selectOption('monthly');
    await p.getByRole('button', { name: 'Create key' }).click();
    const keyField = p.getByLabel('API key');
    await keyField.waitFor();
    const key = await keyField.inputValue();
    expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(await keyField.getAttribute('readonly')).not.toBeNull();
    await p.getByText('It will not be shown again').waitFor();
    await p.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => p.getByRole('status').first().textContent()).toContain('Copied');
    expect(await p.evaluate('navigator.clipboard.readText()')).toBe(key);
    await screenshot(p, 'key-created');

    // The key works for a real completion through the gateway.
    const first = await chat(gw, key, HELLO, APP);
    expect(first.status, first.text).toBe(200);
    expect(first.json.choices[0].message.content.length).toBeGreaterThan(0);

    // Done: the key is never shown again, the list has it with its limit.
    await p.getByRole('button', { name: 'Done' }).click();
    await p.reload();
    const row = p.getByRole('row', { name: 'Key ci server' });
    await row.waitFor();
    expect(await p.content()).not.toContain(key);
    expect(await row.textContent()).toContain('per month');
    expect(await row.textContent()).toContain('Active');
    await expect.poll(async () => (await row.textContent()) ?? '').toMatch(/\$0\.0000\d+/);
    await screenshot(p, 'keys');

    // Rename.
    await p.getByRole('button', { name: 'Rename ci server' }).click();
    await p.getByLabel('New name for ci server').fill('ci renamed');
    await p.getByRole('button', { name: 'Save name' }).click();
    const renamed = p.getByRole('row', { name: 'Key ci renamed' });
    await renamed.waitFor();
    // Said to a screen reader through the page's one live region, as every such result is.
    const announcer = p.getByTestId('announcer');
    expect(await announcer.getAttribute('role')).toBe('status');
    const spoken = async () => ((await announcer.textContent()) ?? '').trim();
    await expect.poll(spoken).toBe('Key renamed');

    // Disable → the API refuses the key; enable → it works again.
    await p.getByRole('button', { name: 'Disable ci renamed' }).click();
    await p.getByRole('button', { name: 'Enable ci renamed' }).waitFor();
    expect(await renamed.textContent()).toContain('Disabled');
    expect((await chat(gw, key, HELLO)).status).toBe(401);
    await p.getByRole('button', { name: 'Enable ci renamed' }).click();
    await p.getByRole('button', { name: 'Disable ci renamed' }).waitFor();
    expect((await chat(gw, key, HELLO)).status).toBe(200);

    // Delete, after a confirmation that says what happens.
    await p.getByRole('button', { name: 'Delete ci renamed' }).click();
    const dialog = p.getByRole('alertdialog');
    expect(await dialog.textContent()).toContain('stop working');
    await screenshot(p, 'key-delete-confirm');
    await dialog.getByRole('button', { name: 'Delete key' }).click();
    await renamed.waitFor({ state: 'detached' });
    await expect.poll(spoken).toBe('Key ci renamed deleted');
    expect((await getJson(gw, '/key', key)).status).toBe(401);
  });

  it('sign-in never follows a `next` that leaves the site (open redirect)', async () => {
    const p = await page();
    for (const next of ['https://evil.example/', '//evil.example/x', '/\\evil.example']) {
      await p.goto(`/signin?next=${encodeURIComponent(next)}`);
      await signInThroughPage(p, holder.email, holder.password);
      await p.getByRole('heading', { name: 'API keys' }).waitFor();
      expect(new URL(p.url()).origin, next).toBe(gw.url);
      await p.getByRole('button', { name: 'Sign out' }).click();
      await p.getByRole('heading', { name: 'Sign in' }).waitFor();
    }
  });

  it('a management key is created from the dashboard and marked as such', async () => {
    const p = await signedInPage();
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('automation');
    await p.getByLabel(/Management key/).check();
    await p.getByRole('button', { name: 'Create key' }).click();
    const key = await p.getByLabel('API key').inputValue();
    await p.getByRole('button', { name: 'Done' }).click();
    const row = p.getByRole('row', { name: 'Key automation' });
    await row.waitFor();
    expect(await row.textContent()).toContain('Management');
    // It calls no model: no credit limit is offered for it.
    expect(await row.getByRole('button', { name: 'Change the limit of automation' }).count()).toBe(0);
    expect(await row.getByRole('button', { name: 'Rename automation' }).count()).toBe(1);
    // It manages keys through the API and cannot call models.
    expect((await getJson(gw, '/keys', key)).status).toBe(200);
    expect((await chat(gw, key, HELLO)).status).toBe(401);
  });

  it('API errors are shown in words: a limit past what the API takes is refused with its message', async () => {
    const p = await signedInPage();
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('too much');
    await p.getByLabel('Credit limit (USD, optional)').fill('2000000000');
    await p.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => p.getByRole('alert').textContent()).toContain('limit is too large');
  });

  it('an expiry day already past is stopped in the form (no API field name in sight), and no key is made', async () => {
    const p = await signedInPage();
    const before = (await gw.admin('GET', `/accounts/${holder.id}/keys`)).json.data.length as number;
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('too late');
    const expiry = p.getByLabel('Expires after (UTC day, optional)');
    expect(await expiry.getAttribute('min')).toBe(new Date().toISOString().slice(0, 10));
    await expiry.fill('2001-01-01');
    await p.getByRole('button', { name: 'Create key' }).click();
    expect(
      await expiry.evaluate(
        (input) => (input as unknown as { validity: { rangeUnderflow: boolean } }).validity.rangeUnderflow,
      ),
    ).toBe(true);
    expect(await p.getByRole('alert').count()).toBe(0);
    expect((await gw.admin('GET', `/accounts/${holder.id}/keys`)).json.data.length).toBe(before);
    // Past the browser's own check (a browser without it), the form says it in words.
    await expiry.evaluate((input) => input.removeAttribute('min'));
    await p.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => p.getByRole('alert').textContent()).toContain('The expiry day has passed');
    expect((await gw.admin('GET', `/accounts/${holder.id}/keys`)).json.data.length).toBe(before);
  });

  it('Activity shows the call: charts for 30 UTC days, the generation in the table, filtered by key', async () => {
    const activityKey = await gw.createKey(holder.id, { name: 'activity key' });
    const otherKey = await gw.createKey(holder.id, { name: 'other key' });
    const done = await chat(gw, activityKey.key, HELLO, APP);
    const other = await chat(gw, otherKey.key, HELLO);
    expect(done.status, done.text).toBe(200);
    expect(other.status, other.text).toBe(200);
    const generationId = done.json.id as string;
    const p = await signedInPage();
    await p.getByRole('link', { name: 'Activity' }).click();
    await p.getByRole('heading', { name: 'Activity' }).waitFor();
    const table = p.getByRole('table', { name: 'Recent generations, newest first' });
    await table.getByText(generationId).waitFor();
    const row = table.getByRole('row').filter({ hasText: generationId });
    expect(await row.textContent()).toContain('test/chat');
    expect(await row.textContent()).toContain('Dashboard Demo');
    await table.getByText(other.json.id as string).waitFor();
    // Three charts (spend, tokens, requests) drawn by uPlot, and the 30-day totals.
    for (const title of ['Spend (USD)', 'Tokens', 'Requests'])
      await p.getByRole('img', { name: `${title}, per UTC day for the last 30 days` }).waitFor();
    expect(await p.locator('.chart canvas').count()).toBe(3);
    // Each drawing's values as a table for those who cannot see it: a row per day, today's counted.
    const requestsTable = p.getByRole('table', { name: 'Requests, per UTC day' });
    expect(await requestsTable.locator('tbody tr').count()).toBe(30);
    expect(Number(await requestsTable.locator('tbody tr').last().locator('td').first().textContent())).toBeGreaterThan(
      0,
    );
    // Hidden, the tables take no room: the page does not scroll sideways (they widened it — review).
    // Grouped by key (a column per key), at desktop and phone width.
    const sideways = 'document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth';
    await p.getByLabel('Group by').selectOption('key');
    await p.getByRole('table', { name: 'Requests, per UTC day' }).locator('thead th').nth(2).waitFor(PATIENT);
    expect(await p.evaluate(sideways)).toBe(0);
    await p.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => p.evaluate(sideways)).toBe(0);
    await p.setViewportSize({ width: 1280, height: 860 });
    await p.getByLabel('Group by').selectOption('model');
    await expect.poll(async () => (await p.locator('.stats').textContent()) ?? '').toMatch(/Requests\s*[1-9]/);
    await screenshot(p, 'activity');
    // Filtered by key: that key's generation only.
    await p.getByLabel('Key', { exact: true }).selectOption(activityKey.hash);
    await table.getByText(other.json.id as string).waitFor({ state: 'detached' });
    await table.getByText(generationId).waitFor();
    await p.getByLabel('Group by').selectOption('key');
    await p.getByRole('img', { name: /^Spend/ }).waitFor();
    // The filters are in the address: a reload (or the link shared) shows the same view.
    await expect.poll(() => new URL(p.url()).search).toBe(`?group_by=key&key=${activityKey.hash}`);
    await p.reload();
    await p.getByRole('heading', { name: 'Activity' }).waitFor();
    expect(await p.getByLabel('Group by').inputValue()).toBe('key');
    await expect.poll(() => p.getByLabel('Key', { exact: true }).inputValue()).toBe(activityKey.hash);
    await table.getByText(generationId).waitFor();
    expect(await table.getByText(other.json.id as string).count()).toBe(0);
  });

  it('Credits shows the balance, purchased, granted and used', async () => {
    const p = await signedInPage();
    await p.getByRole('link', { name: 'Credits' }).click();
    await p.getByRole('heading', { name: 'Credits' }).waitFor();
    const balance = p.getByRole('definition').first();
    await expect.poll(async () => (await balance.textContent()) ?? '').toMatch(/^\$\d+\.\d+/);
    const granted = p.locator('.stats > div').filter({ hasText: 'Granted' });
    expect(await granted.textContent()).toContain('$25.00');
    // The gateway serves a free model: today's allowance as it counts it (no purchase yet: the day's 50).
    await p.getByText(/^Free models: \d+ of 50 requests left today \(UTC\)\.$/).waitFor();
    await screenshot(p, 'credits');
  });

  it('Credits lists the credit entries, newest first', async () => {
    await gw.admin('POST', `/accounts/${holder.id}/credits`, {
      amount: 7.5,
      kind: 'purchase',
      reference: 'invoice-browser-1',
    });
    const p = await signedInPage();
    await p.getByRole('link', { name: 'Credits' }).click();
    const history = p.getByRole('table', { name: 'Credit entries, newest first' });
    const newest = history.getByRole('row').nth(1);
    await newest.waitFor();
    expect(await newest.textContent()).toContain('invoice-browser-1');
    expect(await newest.textContent()).toContain('Purchase');
    expect(await newest.textContent()).toContain('$7.50');
    expect(await history.textContent()).toContain('Grant');
    await screenshot(p, 'credits');
  });

  it('Settings: notification settings tolerate a gateway without them; sign out everywhere ends the session', async () => {
    const p = await signedInPage();
    await p.getByRole('link', { name: 'Settings' }).click();
    await p.getByRole('heading', { name: 'Change password' }).waitFor();
    await p.getByRole('heading', { name: 'Notifications' }).waitFor();
    expect(await p.getByRole('alert').count()).toBe(0);
    await screenshot(p, 'settings');
    // A mismatch is caught before any request.
    await p.getByLabel('Current password').fill(holder.password);
    await p.getByLabel(/^New password/).fill('another long password');
    await p.getByLabel('Repeat the new password').fill('a different long password');
    await p.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => p.getByRole('alert').textContent()).toContain('differ');

    await p.getByRole('button', { name: 'Sign out everywhere' }).click();
    await p.getByRole('heading', { name: 'Sign in' }).waitFor();
    // The button went with the page: the focus goes to the new page's heading, not the document's body.
    await expect.poll(async () => (await focusedElement(p)).name).toBe('h1:Sign in');
    await p.goto('/keys');
    await p.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(new URL(p.url()).searchParams.get('next')).toBe('/keys');
  });

  it('OAuth PKCE end to end: the SDK builds the URL, the holder signs in and approves, the callback gets a code, the SDK exchanges it', async () => {
    const callback = await startCallbackServer();
    open.push(callback);
    const sdk = new OpenRouter({ serverURL: gw.api, retryConfig: { strategy: 'none' } });
    const { codeChallenge, codeVerifier } = await sdk.oAuth.createSHA256CodeChallenge();
    const authorizationUrl = await sdk.oAuth.createAuthorizationUrl({
      callbackUrl: callback.url,
      codeChallenge,
      codeChallengeMethod: 'S256',
      limit: 3,
    });
    expect(new URL(authorizationUrl).pathname).toBe('/auth');

    const p = await page();
    // Not signed in: sign in first, then back to the approval.
    await p.goto(authorizationUrl);
    await signInThroughPage(p, holder.email, holder.password);
    const heading = p.getByRole('heading', { name: /^Authorize / });
    await heading.waitFor();
    expect(new URL(p.url()).pathname).toBe('/auth');
    // The sign-in form went: the focus is on the approval's heading (it waited for the app's details).
    await expect.poll(async () => (await focusedElement(p)).name).toMatch(/^h1:Authorize http/);
    await p.getByText(new URL(callback.url).origin).first().waitFor();
    expect(await p.getByLabel('Credit limit for this app (USD, optional)').inputValue(), p.url()).toBe('3');
    // Which account pays, in the approval itself: at phone width the header does not show it.
    expect(await p.locator('form.authorize').textContent()).toContain(
      `spends the credits of your account ${holder.email}`,
    );
    await screenshot(p, 'oauth-approve');
    await p.getByRole('button', { name: 'Approve' }).click();
    await p.getByRole('heading', { name: 'Back in the demo app' }).waitFor();
    expect(callback.received).toHaveLength(1);
    const code = callback.received[0]!.get('code');
    expect(code).toBeTruthy();

    const exchanged = await sdk.oAuth.exchangeAuthCodeForAPIKey({
      requestBody: { code: code!, codeVerifier, codeChallengeMethod: 'S256' },
    });
    expect(exchanged.key).toMatch(/^sk-tg-v1-/);
    expect((await chat(gw, exchanged.key, HELLO)).status).toBe(200);
    // A used code is refused (presented again with its verifier it would also revoke the key it gave:
    // test/account.oauth.test.ts).
    await expect(sdk.oAuth.exchangeAuthCodeForAPIKey({ requestBody: { code: code! } })).rejects.toThrow();

    // The app is listed under Apps, with its limit; revoking it ends the key.
    await p.goto('/apps');
    const appRow = p.getByRole('row').filter({ has: p.getByRole('button', { name: /^Revoke / }) });
    await appRow.waitFor();
    expect(await appRow.textContent()).toContain('$3.00 in total');
    expect(await appRow.textContent()).toContain('Active');
    await screenshot(p, 'apps');
    // Past its expiry the app's key no longer works: the page says Expired, as the Keys page does.
    const hash = createHash('sha256').update(exchanged.key).digest('hex');
    await gw.database
      .openDriver()
      .run('UPDATE api_keys SET expires_at = ? WHERE hash = ?', [Date.now() - 60_000, hash]);
    await p.reload();
    await appRow.waitFor();
    expect(
      await appRow
        .getByRole('cell')
        .filter({ hasText: /^Expired$/ })
        .count(),
    ).toBe(1);
    // A confirmation closed without revoking gives the focus back to Revoke.
    await appRow.getByRole('button', { name: /^Revoke / }).click();
    await p.keyboard.press('Escape');
    await p.getByRole('alertdialog').waitFor({ state: 'detached' });
    expect((await focusedElement(p)).name).toMatch(/^button:Revoke /);
    await appRow.getByRole('button', { name: /^Revoke / }).click();
    await p.getByRole('alertdialog').getByRole('button', { name: 'Revoke access' }).click();
    await p.getByText('You have not authorized any app.').waitFor();
    expect((await focusedElement(p)).name).toBe('h1:Apps');
    expect((await chat(gw, exchanged.key, HELLO)).status).toBe(401);

    // Deny: the callback receives error=access_denied and no code.
    const denied = await sdk.oAuth.createAuthorizationUrl({
      callbackUrl: callback.url,
      codeChallenge,
      codeChallengeMethod: 'S256',
    });
    await p.goto(denied);
    await heading.waitFor();
    await p.getByRole('button', { name: 'Deny' }).click();
    await p.getByRole('heading', { name: 'Back in the demo app' }).waitFor();
    expect(callback.received[1]!.get('error')).toBe('access_denied');
    expect(callback.received[1]!.get('code')).toBeNull();
  });

  it('an OAuth request with a callback URL that is not allowed is refused on the page (HTTP 400), before any sign-in', async () => {
    const p = await page();
    const response = await p.goto(
      `/auth?callback_url=${encodeURIComponent('http://attacker.example/steal')}&code_challenge=x&code_challenge_method=plain`,
    );
    expect(response?.status()).toBe(400);
    await p.getByRole('heading', { name: "This app's callback URL is not allowed" }).waitFor();
    expect(await p.getByRole('alert').textContent()).toContain('https');
    expect(await p.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await screenshot(p, 'oauth-refused');
  });

  it('the public rankings page shows the app that sent attributed calls, without signing in', async () => {
    const rankingKey = await gw.createKey(holder.id, { name: 'ranking key' });
    expect((await chat(gw, rankingKey.key, HELLO, APP)).status).toBe(200);
    const p = await page();
    await p.goto('/rankings');
    await p.getByRole('heading', { name: 'Rankings' }).waitFor();
    const apps = p.getByRole('table', { name: 'Top apps by tokens' });
    await apps.getByText('Dashboard Demo').waitFor();
    expect(await apps.textContent()).toContain('https://dashboard-demo.example');
    await p.getByRole('table', { name: 'Top models by tokens' }).getByText('test/chat').first().waitFor();
    for (const period of ['This week', 'This month']) {
      await p.getByRole('button', { name: period }).click();
      await apps.getByText('Dashboard Demo').waitFor();
    }
    // Nothing about an account: no e-mail, key label or spend.
    expect(await p.content()).not.toContain(holder.email);
    await screenshot(p, 'rankings');
  });

  it('the API reference at /docs renders the gateway’s own OpenAPI document, without signing in', async () => {
    const p = await page();
    await p.goto('/docs');
    await p.getByRole('heading', { name: 'API reference', level: 1 }).waitFor();
    const chatOperation = p.getByRole('article', { name: 'POST /api/v1/chat/completions' });
    await chatOperation.waitFor();
    expect(await chatOperation.textContent()).toContain('Credentials: inference key');
    // The descriptions' inline code is set as code, not shown as Markdown backticks.
    expect(await chatOperation.locator('p code', { hasText: 'stream: true' }).count()).toBe(1);
    expect(await chatOperation.locator('p.muted').first().textContent()).not.toContain('`');
    expect(await chatOperation.getByRole('cell', { name: 'messages', exact: true }).count()).toBe(1);
    // A named answer links to its schema, which lists its fields.
    const keyOperation = p.getByRole('article', { name: 'GET /api/v1/keys/{hash}' });
    await keyOperation.getByRole('link', { name: 'OwnedApiKey' }).click();
    await p.waitForURL(/#schema-OwnedApiKey$/);
    const schema = p.getByRole('article', { name: 'Schema OwnedApiKey' });
    expect(await schema.getByRole('cell', { name: 'limit_remaining' }).count()).toBe(1);
    // Every route of the document is on the page.
    const document = (await getJson(gw, '/openapi.json')).json as { paths: Record<string, object> };
    const operations = Object.values(document.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    expect(await p.locator('article.api-operation h3 .api-method').count()).toBe(operations);
    await screenshot(p, 'api-reference');
  });

  // Outside check: at 1280-1920 px the table (ten columns) outgrew its box and pushed the actions out
  // of view. With the holder's keys from the tests above it was 1,139 px in a 1,050 px box.
  it('the keys page fits a desktop screen (1280 px) with app keys, limits and expiry dates: every action in view', async () => {
    const expires = new Date(Date.now() + 90 * 86_400_000).toISOString();
    const appKey = await gw.createKey(holder.id, {
      name: 'Research assistant (staging)',
      limit: 12.5,
      limit_reset: 'monthly',
      expires_at: expires,
    });
    // Issued to an OAuth app, as an approval makes it: the row carries the app's badge.
    const driver = gw.database.openDriver();
    await driver.run('INSERT INTO oauth_apps (id, origin, created_at) VALUES (?, ?, ?)', [
      4242,
      'https://research-assistant.staging.example.com',
      Date.now(),
    ]);
    await driver.run(
      'INSERT INTO oauth_grants (id, account_id, app_id, app_name, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ['grant_wide_screen', holder.id, 4242, 'https://research-assistant.staging.example.com', appKey.hash, Date.now()],
    );
    await gw.createKey(holder.id, { name: 'nightly batch export', limit: 1_000_000_000, expires_at: expires });
    // A key reported leaked: the longest status word.
    const leaked = await gw.createKey(holder.id, { name: 'pasted in a gist' });
    expect((await gw.admin('POST', `/keys/${leaked.hash}/compromised`, {})).status).toBe(200);
    const p = await signedInPage({ width: 1280, height: 900 });
    await p.getByRole('row', { name: 'Key Research assistant (staging)' }).getByText('App:').waitFor();
    // A string: the tests are compiled without the DOM's types.
    const fits = await p.evaluate<{ table: number; box: number }>(
      "(() => { const t = document.querySelector('table'); return { table: t.scrollWidth, box: t.parentElement.clientWidth }; })()",
    );
    await screenshot(p, 'keys-desktop');
    expect(fits.table, JSON.stringify(fits)).toBeLessThanOrEqual(fits.box);
    for (const name of ['Research assistant (staging)', 'nightly batch export', 'pasted in a gist']) {
      const box = await p.getByRole('button', { name: `Delete ${name}` }).boundingBox();
      expect(box!.x + box!.width, name).toBeLessThanOrEqual(1280);
    }
    // An expiry's day and time each stay on one line (a wrapped span has a box per line): "2027-02-"
    // above "27" was seen once the expiry showed its time.
    const broken = await p.evaluate<string[]>(
      "[...document.querySelectorAll('.unbroken')].filter((e) => e.getClientRects().length > 1).map((e) => e.textContent)",
    );
    expect(await p.locator('.unbroken').count()).toBeGreaterThan(0);
    expect(broken).toEqual([]);
  });

  it('the keys page works at phone width (390 px): no horizontal scrolling, every action reachable', async () => {
    await gw.createKey(holder.id, { name: 'phone key', limit: 2, limit_reset: 'daily' });
    const p = await signedInPage({ width: 390, height: 844 });
    const row = p.getByRole('row', { name: 'Key phone key' });
    await row.waitFor();
    expect(await p.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    for (const action of ['Rename', 'Disable', 'Delete']) {
      const button = p.getByRole('button', { name: `${action} phone key` });
      await button.waitFor();
      const box = await button.boundingBox();
      expect(box!.x + box!.width, action).toBeLessThanOrEqual(390);
    }
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).waitFor();
    expect(await p.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await p.getByRole('button', { name: 'Cancel' }).click();
    await screenshot(p, 'keys-phone');
    // The tab bar scrolls sideways at this width: the current page's tab is in view (outside check:
    // on Rankings and the API reference it was off the right edge).
    for (const [path, tab] of [
      ['/rankings', 'Rankings'],
      ['/docs', 'API'],
    ] as const) {
      await p.goto(path);
      const link = p.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: tab, exact: true });
      await expect.poll(async () => (await link.getAttribute('aria-current')) ?? '').toBe('page');
      await expect
        .poll(async () => {
          const box = await link.boundingBox();
          return box !== null && box.x >= 0 && box.x + box.width <= 391; // a pixel for subpixel layout
        })
        .toBe(true);
    }
  });
});
