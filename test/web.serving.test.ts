/**
 * The dashboard's static serving (src/http/routes/web.ts): page paths answer index.html with the
 * strict headers, hashed assets are immutable, unknown assets and paths stay JSON 404s, /auth
 * refuses a bad callback_url with 400, and a gateway without a built dashboard says so.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY, SPA_PATHS } from '../src/http/routes/web.js';
import { loadWebBundle } from '../src/http/web-bundle.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const target = sqliteTarget;
const INDEX =
  '<!doctype html><html><head><title>t</title><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>';

async function get(url: string, headers: Record<string, string> = {}) {
  const response = await request(url, { headers });
  const body = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body };
}

describe('dashboard serving', () => {
  let dir: string;
  let gw: TestGateway;
  let bare: TestGateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-web-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log("hi")');
    writeFileSync(join(dir, 'assets', 'index-def456.css'), 'body{}');
    writeFileSync(join(dir, 'assets', 'index-abc123.js.map'), '{}');
    gw = await startTestGateway({ target, web: loadWebBundle(dir) });
    bare = await startTestGateway({ target, web: loadWebBundle(join(dir, 'missing')) });
  });
  afterAll(async () => {
    await gw?.close();
    await bare?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every page path answers index.html, no-cache, with the strict CSP and hardening headers', async () => {
    for (const path of SPA_PATHS.filter((p) => p !== '/auth')) {
      const page = await get(`${gw.url}${path}`);
      expect(page.status, path).toBe(200);
      expect(page.body).toBe(INDEX);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(page.headers['x-content-type-options']).toBe('nosniff');
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.headers['referrer-policy']).toBe('no-referrer');
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
  });

  it('hashed assets are served from memory with their type and a year of immutable caching', async () => {
    const js = await get(`${gw.url}/assets/index-abc123.js`);
    expect(js.status).toBe(200);
    expect(js.body).toBe('console.log("hi")');
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    const css = await get(`${gw.url}/assets/index-def456.css`);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('an unknown asset, a source map and a traversal attempt are JSON 404s', async () => {
    for (const path of [
      '/assets/index-zzz.js',
      '/assets/index-abc123.js.map',
      '/assets/..%2Findex.html',
      '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
    ]) {
      const answer = await get(`${gw.url}${path}`);
      expect(answer.status, path).toBe(404);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(answer.body).error.code).toBe(404);
    }
  });

  it('the SPA never shadows the API or the operations routes, even for a browser asking for HTML', async () => {
    const html = { accept: 'text/html,application/xhtml+xml' };
    for (const path of ['/api/v1/nope', '/nope', '/keys/extra', '/keys/', '/api/v1/keys']) {
      const answer = await get(`${gw.url}${path}`, html);
      expect(answer.headers['content-type'], path).toMatch(/^application\/json/);
      expect(answer.status, path).toBeGreaterThanOrEqual(400);
    }
    expect((await get(`${gw.url}/healthz`, html)).body).toContain('"ok"');
    expect((await get(`${gw.url}/metrics`, html)).headers['content-type']).toMatch(/^text\/plain/);
    const wrongMethod = await request(`${gw.url}/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(wrongMethod.statusCode).toBe(405);
    expect((await wrongMethod.body.json()) as any).toMatchObject({ error: { code: 405 } });
  });

  it('/auth with a valid callback_url is the page; with a bad one it is the page with status 400 and the reason', async () => {
    const ok = await get(
      `${gw.url}/auth?callback_url=${encodeURIComponent('http://localhost:3000/cb')}&code_challenge=abc&code_challenge_method=S256`,
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toBe(INDEX);
    for (const bad of [
      'javascript:alert(1)',
      'http://evil.example/cb',
      'https://user:pw@example.com/cb',
      'https://example.com/cb#x',
      '',
    ]) {
      const refused = await get(`${gw.url}/auth?callback_url=${encodeURIComponent(bad)}`);
      expect(refused.status, bad).toBe(400);
      expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(refused.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(refused.body).toMatch(/<meta name="tollgate-auth-problem" content="callback_url [^"<>]+">/);
      // Never the submitted value itself.
      expect(refused.body).not.toContain('evil.example');
      expect(refused.body).not.toContain('javascript:');
    }
    const missing = await get(`${gw.url}/auth`);
    expect(missing.status).toBe(400);
    expect(missing.body).toContain('callback_url is required');
  });

  it('without a built dashboard the pages answer a 503 page that says so, and the API still works', async () => {
    const page = await get(`${bare.url}/`);
    expect(page.status).toBe(503);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('The dashboard was not built');
    expect(page.body).toContain('npm run build');
    expect((await get(`${bare.url}/assets/index-abc123.js`)).status).toBe(404);
    expect((await get(`${bare.url}/api/v1/models`)).status).toBe(200);
  });
});
