/**
 * The dashboard while the gateway cannot read the session (its database is down: GET /session/status
 * answers 503), in Debian's Chromium. Before, a signed-in holder who opened a page then was sent to
 * the sign-in page with the error, as if signed out, and stayed there. Now the page says the gateway
 * cannot be reached, keeps its address, tries again by itself (backing off) or on request, and shows
 * the page once the session can be read. A page whose data cannot be loaded mid-session says so and
 * offers to try again.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { breakableStore, type Breakable } from '../helpers/journal.js';
import { createHolder } from '../helpers/session.js';
import { sqliteTarget } from '../helpers/store-targets.js';
import { chromiumAvailable, launchChromium, newPage, signInThroughPage } from './chromium.js';

const BUILT = existsSync(fileURLToPath(new URL('../../dist/web/index.html', import.meta.url)));

describe.skipIf(!chromiumAvailable)('the dashboard while the session cannot be read', () => {
  let gw: TestGateway;
  let browser: Browser;
  let broken: Breakable;
  const open: { close(): Promise<void> }[] = [];
  const problems: string[][] = [];

  beforeAll(async () => {
    if (!BUILT) throw new Error('dist/web/index.html is missing: run `npm run build` before the browser tests');
    broken = breakableStore();
    gw = await startTestGateway({ target: sqliteTarget, wrapStore: broken.wrap });
    browser = await launchChromium();
  }, 60_000);

  afterEach(async () => {
    broken.mode = 'ok';
    await Promise.all(open.splice(0).map((c) => c.close()));
    expect(problems.splice(0).flat()).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  async function signedInOnKeys() {
    const holder = await createHolder(gw, 'a long demo password 123');
    const created = await newPage(browser, gw.url);
    open.push(created.context);
    problems.push(created.problems);
    const { page } = created;
    await page.goto('/keys');
    await signInThroughPage(page, holder.email, holder.password);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    return page;
  }

  it('says the gateway cannot be reached, keeps the page, and shows it once asked to try again', async () => {
    const page = await signedInOnKeys();
    broken.mode = 'all';
    const refused = page.waitForResponse((r) => r.url().endsWith('/api/v1/session/status') && r.status() === 503);
    await page.reload();
    await refused;
    await page.getByRole('heading', { name: 'Tollgate cannot be reached right now' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'Storage is unavailable' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/keys');
    expect(await page.getByRole('heading', { name: 'Sign in' }).count()).toBe(0);
    // Nor a header link inviting a sign-in the session may not need.
    expect(await page.getByRole('link', { name: 'Sign in' }).count()).toBe(0);

    broken.mode = 'ok';
    await page.getByRole('button', { name: 'Try again now' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/keys');
  });

  it('tries again by itself', async () => {
    const page = await signedInOnKeys();
    broken.mode = 'all';
    await page.reload();
    await page.getByRole('heading', { name: 'Tollgate cannot be reached right now' }).waitFor();
    await page.getByText(/Trying again in \d+ s\./).waitFor();
    broken.mode = 'ok';
    // The first tries come 1, then 2 s apart: the page returns without a click.
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
  });

  it('offers to try again when a page cannot load its data mid-session', async () => {
    const page = await signedInOnKeys();
    broken.mode = 'all';
    await page.getByRole('link', { name: 'Credits' }).click();
    const notice = page.getByRole('alert').filter({ hasText: 'Could not load your account' });
    await notice.waitFor();
    expect(await notice.textContent()).toContain('Storage is unavailable');
    expect(await page.locator('[aria-label="Credit balance"]').count()).toBe(0); // no balance shown

    broken.mode = 'ok';
    await notice.getByRole('button', { name: 'Try again' }).click();
    await notice.waitFor({ state: 'detached' });
    await page.locator('[aria-label="Credit balance"]').getByText('Balance').waitFor();
  });

  it('an approval page whose request cannot be loaded for now offers to try again (not "cannot be used")', async () => {
    const page = await signedInOnKeys();
    let refusals = 1;
    await page.route('**/api/v1/oauth/authorize?**', (route) =>
      refusals-- > 0
        ? route.fulfill({
            status: 503,
            contentType: 'application/json',
            body: JSON.stringify({ error: { code: 503, message: 'Storage is unavailable' } }),
          })
        : route.continue(),
    );
    await page.goto(`/auth?${new URLSearchParams({ callback_url: 'http://localhost:9/cb' }).toString()}`);
    const notice = page.getByRole('alert').filter({ hasText: 'Could not load this authorization request' });
    await notice.waitFor();
    expect(await page.getByText('This authorization request cannot be used').count()).toBe(0);
    await notice.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { name: 'Authorize http://localhost:9' }).waitFor();
  });
});
