/**
 * Issue 8, finding 9 (small items) and the route declarations: bounded offsets, headers on answers
 * carrying keys, no CORS on the admin API, a connection cap, the SSE line limit, /metrics protection.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMetricsListener } from '../src/http/metrics-listener.js';
import { call, expectError, HELLO } from './helpers/api.js';
import { ADMIN_TOKEN, chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { jsonBodyOf, rawExchange, type RawExchange } from './helpers/raw-http.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('HTTP surface', () => {
  let gw: TestGateway;
  let accountId: string;
  let management: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_METRICS_TOKEN: 'metrics-token-for-tests-01' },
    });
    accountId = await gw.createAccount(1);
    management = (await gw.createKey(accountId, { management: true })).key;
  });
  afterAll(() => gw.close());

  it('every route declares who may call it', () => {
    const undeclared = gw.gateway.routes.declarations().filter((route) => route.auth === undefined);
    expect(undeclared).toEqual([]);
    const byUrl = new Map(
      gw.gateway.routes.declarations().map((route) => [`${route.method} ${route.url}`, route.auth]),
    );
    expect(byUrl.get('POST /api/v1/chat/completions')).toBe('inference');
    expect(byUrl.get('POST /api/v1/keys')).toBe('account'); // a management key or the dashboard's session
    expect(byUrl.get('POST /api/v1/admin/accounts')).toBe('admin');
    expect(byUrl.get('GET /api/v1/models')).toBe('none');
  });

  it('an HTTP/1.1 request without Host → 400 in the error record, connection closed; HTTP/1.0 may leave it out', async () => {
    const exchange = await rawExchange(gw.url);
    await exchange.write(`POST /api/v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}`);
    expect(await exchange.status).toBe(400);
    await exchange.closed;
    const raw = exchange.received();
    expect(raw.toLowerCase()).toContain('content-type: application/json');
    expect(jsonBodyOf(raw)).toEqual({ error: { code: 400, message: 'HTTP/1.1 requests need a Host header' } });

    const old = await rawExchange(gw.url);
    await old.write('GET /api/v1/models HTTP/1.0\r\n\r\n');
    await old.closed;
    expect(old.received()).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a repeated Host, or one that is not a host → 400 before anything else (RFC 9112 §3.2); valid forms pass', async () => {
    const ask = async (hostLines: string) => {
      const exchange = await rawExchange(gw.url);
      await exchange.write(`GET /api/v1/models HTTP/1.1\r\n${hostLines}Connection: close\r\n\r\n`);
      const status = await exchange.status;
      await exchange.closed;
      return { status, body: status === 400 ? jsonBodyOf(exchange.received()) : null };
    };
    expect(await ask('Host: a\r\nHost: b\r\n')).toEqual({
      status: 400,
      body: { error: { code: 400, message: 'A request may carry one Host header only' } },
    });
    for (const bad of ['a b', 'evil.com/path', '[::1', 'a@b', 'a:8o'])
      expect(await ask(`Host: ${bad}\r\n`), bad).toEqual({
        status: 400,
        body: { error: { code: 400, message: 'The Host header is not a valid host' } },
      });
    for (const good of [
      'example.com',
      '127.0.0.1:8080',
      '[::1]:80',
      '[fe80::1%25eth0]',
      '[v1.fe80::a+en1]',
      '[V1.fe80::a+en1]',
      'xn--bcher-kva.example',
      'a.b-c_d~e',
      'example.com.',
    ])
      expect((await ask(`Host: ${good}\r\n`)).status, good).toBe(200);
  });

  it('offset=1e20 (and other non-integers) on key listings → 400, never a 500', async () => {
    for (const offset of ['1e20', '1e3', '0x10', '-1', '1.5', '99999999']) {
      expectError(
        await gw.admin('GET', `/accounts/${accountId}/keys?offset=${offset}`).then((r) => ({
          status: r.status,
          headers: { 'content-type': 'application/json' },
          text: JSON.stringify(r.json),
        })),
        400,
      );
      expectError(await call(gw, 'GET', `/keys?offset=${offset}`, { key: management }), 400);
    }
    expect((await gw.admin('GET', `/accounts/${accountId}/keys?offset=0`)).status).toBe(200);
    expect((await call(gw, 'GET', '/keys?offset=1000000', { key: management })).status).toBe(200);
  });

  it('answers carrying a plaintext key are no-store and nosniff; every JSON answer is nosniff', async () => {
    const created = await call(gw, 'POST', '/keys', { key: management, json: { name: 'fresh' } });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.headers['x-content-type-options']).toBe('nosniff');
    const admin = await request(`${gw.api}/admin/accounts/${accountId}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'by admin' }),
    });
    expect(admin.statusCode).toBe(201);
    await admin.body.dump();
    expect(admin.headers['cache-control']).toBe('no-store');
    expect(admin.headers['x-content-type-options']).toBe('nosniff');
    const models = await call(gw, 'GET', '/models');
    expect(models.headers['x-content-type-options']).toBe('nosniff');
    const refused = await call(gw, 'GET', '/keys');
    expect(refused.status).toBe(401);
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
  });

  it('the admin API sends no CORS headers and refuses preflights; the public API keeps them', async () => {
    const origin = { origin: 'https://evil.example' };
    const admin = await request(`${gw.api}/admin/accounts/${accountId}`, {
      headers: { ...origin, authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    await admin.body.dump();
    expect(admin.statusCode).toBe(200);
    expect(admin.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await request(`${gw.api}/admin/accounts`, {
      method: 'OPTIONS',
      headers: {
        ...origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });
    await preflight.body.dump();
    expect(preflight.statusCode).toBeGreaterThanOrEqual(400);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-methods']).toBeUndefined();
    const publicPreflight = await request(`${gw.api}/keys`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'POST' },
    });
    await publicPreflight.body.dump();
    expect(publicPreflight.statusCode).toBe(204);
    expect(publicPreflight.headers['access-control-allow-origin']).toBe('*');
  });

  it('/metrics requires TOLLGATE_METRICS_TOKEN when it is set', async () => {
    const anonymous = await request(`${gw.url}/metrics`);
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();
    const wrong = await request(`${gw.url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token' } });
    expect(wrong.statusCode).toBe(401);
    await wrong.body.dump();
    const scraped = await request(`${gw.url}/metrics`, {
      headers: { authorization: 'Bearer metrics-token-for-tests-01' },
    });
    expect(scraped.statusCode).toBe(200);
    expect(await scraped.body.text()).toContain('tollgate_');
    // The admin token is not a metrics token.
    const admin = await request(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(admin.statusCode).toBe(401);
    await admin.body.dump();
  });
});

describe('/metrics on its own listener', () => {
  it('leaves the API listener without /metrics and serves it on the configured address', async () => {
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file.server, { metrics: { host: '127.0.0.1', port: 0 } }),
    });
    const listener = await startMetricsListener(gw.gateway.services.metrics, { host: '127.0.0.1', port: 0 }, null);
    try {
      const onApi = await request(`${gw.url}/metrics`);
      await onApi.body.dump();
      expect(onApi.statusCode).toBe(404);
      const own = await request(`${listener.url}/metrics`);
      expect(own.statusCode).toBe(200);
      expect(await own.body.text()).toContain('tollgate_http_requests_total');
      const elsewhere = await request(`${listener.url}/api/v1/models`);
      await elsewhere.body.dump();
      expect(elsewhere.statusCode).toBe(404);
    } finally {
      await listener.close();
      await gw.close();
    }
  });
});

describe('connection cap', () => {
  it('beyond server.max_connections a new connection is closed at once, the open ones keep working', async () => {
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file.server, { max_connections: 3 }),
    });
    const open = [];
    try {
      // Three idle (slow) clients hold every slot.
      for (let i = 0; i < 3; i++) {
        const conn = await rawExchange(gw.url);
        await conn.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        expect(await conn.status).toBe(200);
        open.push(conn);
      }
      const events: string[] = [];
      const fourth = await rawExchange(gw.url, (event) => events.push(event));
      await fourth.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await fourth.closed;
      expect(events).toEqual(['closed']);
      expect(fourth.received()).toBe('');
      // A slot frees up when a client leaves.
      open.pop()!.socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const fifth = await rawExchange(gw.url);
      await fifth.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      expect(await fifth.status).toBe(200);
    } finally {
      for (const conn of open) conn.socket.destroy();
      await gw.close();
    }
  });
});

describe('connection cap shared between addresses', () => {
  let gw: TestGateway;
  const open: RawExchange[] = [];
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file.server, { max_connections: 3 }),
    });
  });
  afterEach(async () => {
    for (const conn of open.splice(0)) conn.socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
  });
  afterAll(async () => {
    await gw?.close();
  });

  // On a connection closed after the answer: a kept-alive one would hold a slot in the next test.
  const slots = async () => (await request(`${gw.url}/metrics`, { reset: true })).body.text();

  it('one address holding every slot with idle kept-alive connections does not lock another address out', async () => {
    // The outside check's flood: thousands of connections, one request each, then kept alive.
    const closed: number[] = [];
    for (let i = 0; i < 3; i++) {
      const conn = await rawExchange(gw.url, (event) => event === 'closed' && closed.push(i), '127.0.0.1');
      await conn.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      expect(await conn.status).toBe(200);
      open.push(conn);
    }
    const other = await rawExchange(gw.url, undefined, '127.0.0.2');
    open.push(other);
    await other.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(await other.status).toBe(200);
    // One of the largest holder's idle connections made room.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toHaveLength(1);
    for (const conn of open.splice(0)) conn.socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await slots()).toMatch(/tollgate_connection_slots_total\{outcome="made_room"\} 1\b/);
  });

  it('a connection with a request in progress is never closed to make room: the newcomer is refused', async () => {
    for (let i = 0; i < 3; i++) {
      const conn = await rawExchange(gw.url, undefined, '127.0.0.1');
      // Headers in, the body still to come: the request is in progress.
      await conn.write(
        'POST /api/v1/password-reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      );
      open.push(conn);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const events: string[] = [];
    const other = await rawExchange(gw.url, (event) => events.push(event), '127.0.0.2');
    await other.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await other.closed;
    expect(events).toEqual(['closed']);
    for (const conn of open) expect(conn.socket.destroyed).toBe(false);
  });
});

describe('upstream SSE line limit', () => {
  let upstream: Server;
  let gw: TestGateway;
  beforeAll(async () => {
    // An upstream that streams one data line of 9 Mi characters and never ends it.
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const piece = 'x'.repeat(1024 * 1024);
        res.write('data: {"choices":[{"index":0,"delta":{"content":"');
        for (let i = 0; i < 9; i++) res.write(piece);
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'endless-line',
          name: 'Endless line',
          kind: 'openai',
          base_url: url,
          timeouts: { connect_ms: 2000, first_token_ms: 120_000, idle_ms: 120_000 },
        });
        file.models.push({
          id: 'test/long-line',
          name: 'long line',
          context_length: 8192,
          endpoints: [
            { provider: 'endless-line', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } },
            { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000001', completion: '0.000002' } },
          ],
        });
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  // The first-token and idle timeouts are far beyond the test's timeout: only the line limit can end the attempt in time.
  it('an over-long line is an invalid response that fails over to the next endpoint', async () => {
    const key = (await gw.createKey(await gw.createAccount(1))).key;
    const answer = await chat(gw, key, { model: 'test/long-line', messages: HELLO });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.provider).toBe('Mock B');
    const generation = await call(gw, 'GET', `/generation?id=${answer.json.id}`, { key });
    expect(generation.json.data.provider_responses.map((r: { provider_name: string }) => r.provider_name)).toEqual([
      'Endless line',
      'Mock B',
    ]);
  }, 30_000);
});
