/**
 * No key in the logs when a caller puts it in the URL: the access line's URL has secret-bearing
 * query parameters redacted under their usual spellings (`apiKey`, `api-key`, `authorization`, …)
 * and anything shaped like a Tollgate key cut out wherever it sits (http/loggable-url.ts). Written
 * through the production logger (main.ts createLogger) to memory.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';
import { capturedLogger } from './helpers/log-capture.js';

describe('a key in the request URL', () => {
  let gw: TestGateway;
  let key: string;
  const { logger, lines } = capturedLogger();
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, logger });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw?.close());

  it('POST /chat/completions?apiKey=<key> (no Authorization) → 401, and the key is not in the logs', async () => {
    for (const name of ['apiKey', 'api-key', 'authorization']) {
      const r = await request(`${gw.api}/chat/completions?${name}=${key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(r.statusCode).toBe(401);
      await r.body.text();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const leaked = lines.filter((line) => line.includes(key));
    expect(
      leaked.map((line) => line.slice(0, 300)),
      'log lines carrying the key',
    ).toEqual([]);
  });

  it('a path the router refuses (bad percent-encoding, an over-long segment) is logged like every request, nosniff like every answer', async () => {
    const paths = ['/api/v1/keys/%E0%A4%A', `/api/v1/keys/${'a'.repeat(5_000)}`];
    for (const path of paths) {
      const r = await request(`${gw.url}${path}`);
      expect(r.statusCode).toBeGreaterThanOrEqual(400);
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      await r.body.text();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const logged = lines.filter((line) => line.includes('request completed') && line.includes('/api/v1/keys/'));
    expect(logged.some((line) => line.includes('%E0%A4%A') && line.includes('"statusCode":400'))).toBe(true);
    expect(logged.some((line) => line.includes('aaaa') && line.includes('"statusCode":404'))).toBe(true);
  });
});
