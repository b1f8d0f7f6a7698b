/**
 * A browser caller using the official clients sends request headers of its own, so the browser
 * preflights them: every header a client sends is allowed, or the browser never sends the request.
 * `openai` (dangerouslyAllowBrowser) always sends `X-Stainless-*`; `@openrouter/sdk` sends
 * `X-OpenRouter-Categories` / `X-OpenRouter-Metadata` when the app sets them. Regression: only a
 * fixed list (Authorization, Content-Type, the attribution headers) was allowed.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** Whether the preflight answer lets the browser send every requested header (Fetch: `*` never covers Authorization). */
function allows(allowHeader: string | undefined, requested: string[]): string[] {
  const allowed = String(allowHeader ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  return requested.filter((h) => {
    const name = h.toLowerCase();
    if (allowed.includes(name)) return false;
    return !(allowed.includes('*') && name !== 'authorization');
  });
}

describe('CORS preflight allows the headers the official clients send from a browser', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  async function preflight(headers: string[]) {
    const response = await request(`${gw.api}/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': headers.join(','),
      },
    });
    await response.body.dump();
    return response;
  }

  it('openai SDK in a browser (X-Stainless-* headers, sent on every request)', async () => {
    // What openai@6 sends from a browser (client.js buildHeaders + internal/detect-platform.js), lower-cased
    // and sorted as a browser lists them in Access-Control-Request-Headers.
    const requested = [
      'authorization',
      'content-type',
      'x-stainless-arch',
      'x-stainless-lang',
      'x-stainless-os',
      'x-stainless-package-version',
      'x-stainless-retry-count',
      'x-stainless-runtime',
      'x-stainless-runtime-version',
      'x-stainless-timeout',
    ];
    const response = await preflight(requested);
    expect(response.statusCode).toBe(204);
    expect(allows(response.headers['access-control-allow-headers'] as string, requested)).toEqual([]);
  });

  it('@openrouter/sdk in a browser with appCategories / metadata', async () => {
    const requested = [
      'authorization',
      'content-type',
      'http-referer',
      'x-openrouter-categories',
      'x-openrouter-metadata',
      'x-openrouter-title',
    ];
    const response = await preflight(requested);
    expect(response.statusCode).toBe(204);
    expect(allows(response.headers['access-control-allow-headers'] as string, requested)).toEqual([]);
  });
});
