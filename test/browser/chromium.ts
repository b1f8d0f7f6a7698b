/**
 * Debian's Chromium driven by playwright-core (nothing downloaded). Outside CI a machine without
 * /usr/bin/chromium skips the browser suites with one line; with CI=true a missing browser fails.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const chromiumAvailable = existsSync(CHROMIUM_PATH);

if (!chromiumAvailable) {
  if (process.env.CI === 'true')
    throw new Error(
      `CI=true but ${CHROMIUM_PATH} is missing: install it with apt-get install -y chromium (.ci/run does)`,
    );
  console.log(`browser tests skipped: ${CHROMIUM_PATH} not found (apt-get install -y chromium to run them)`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS, headless: true });
}

/** Page problems a user would never see but that break the page: uncaught errors and CSP refusals. */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text()))
      problems.push(`console: ${message.text()}`);
  });
  return { problems };
}

export async function newPage(
  browser: Browser,
  baseURL: string,
  viewport = { width: 1280, height: 860 },
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ baseURL, viewport, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return { context, page, ...watchPage(page) };
}

const SCREENSHOT_DIR = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

/** `npm run screenshots` refreshes docs/screenshots; ordinary test runs leave the repository alone. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.TOLLGATE_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // Let charts and fonts settle after the last request.
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: `${SCREENSHOT_DIR}${name}.png`, fullPage: true });
}

export async function signInThroughPage(page: Page, email: string, password: string): Promise<void> {
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * The element with the keyboard focus, as `tag:name` — its aria-label, else its name attribute, else
 * its text (`button:Create key`, `input:name`, `h1:API keys`, `body:…`); its value as `value`.
 */
export async function focusedElement(p: Page): Promise<{ name: string; value: string | null }> {
  return (await p.evaluate(`(() => {
    const e = document.activeElement;
    if (!e) return { name: '', value: null };
    const label = e.getAttribute('aria-label') ?? e.getAttribute('name') ?? (e.textContent ?? '').trim();
    return { name: e.tagName.toLowerCase() + ':' + label, value: 'value' in e ? String(e.value) : null };
  })()`)) as { name: string; value: string | null };
}
