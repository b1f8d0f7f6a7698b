/**
 * Edge protection on loopback (docs/architecture.md, docs/api.md "Edge protection"): the per-IP token
 * bucket answers 429 before any authentication work while the gateway keeps serving; slow-loris
 * headers, a stalled body and idle keep-alive connections are cut by the server's timeouts; long
 * answers and streams are not. Timeouts are shortened by configuration so the suite stays fast.
 */
import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const HEADERS_TIMEOUT_MS = 1_000;
const BODY_TIMEOUT_MS = 1_500;
const KEEP_ALIVE_TIMEOUT_MS = 1_000;
/** Node checks deadlines every quarter of the header timeout (see src/http/edge.ts), plus scheduling slack. */
const SLACK_MS = 1_500;

interface RawConnection {
  socket: Socket;
  received(): string;
  /** Milliseconds from connect to close. */
  closed: Promise<number>;
}

function rawConnection(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let data = '';
    const socket = connect({ host: hostname, port: Number(port) }, () =>
      resolve({ socket, received: () => data, closed }),
    );
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - started)));
    socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
    socket.on('error', () => undefined); // a reset after our 408 is fine
    socket.once('error', reject);
  });
}

function bodyOf(raw: string): unknown {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}

// Independent connections: run concurrently so the waits overlap.
describe.concurrent('edge timeouts', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'test/long-stream',
          name: 'long',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@tps=20,tokens=50',
              pricing: { prompt: '0.000001', completion: '0.000002' },
            },
          ],
        },
        {
          id: 'test/slow-answer',
          name: 'slow',
          context_length: 8192,
          endpoints: [
            { provider: 'mock', model: 'mock@latency=2500', pricing: { prompt: '0.000001', completion: '0.000002' } },
          ],
        },
      ],
      configure: (file) => {
        Object.assign(file.server, {
          headers_timeout_ms: HEADERS_TIMEOUT_MS,
          body_timeout_ms: BODY_TIMEOUT_MS,
          keep_alive_timeout_ms: KEEP_ALIVE_TIMEOUT_MS,
        });
        // Upstream timeouts well above the slow answer's 2.5 s, so only the edge timeouts could cut it.
        file.providers[0]!.timeouts = { connect_ms: 5_000, first_token_ms: 5_000, idle_ms: 5_000, response_ms: 10_000 }; // replaced: the harness shares one object
      },
    });
  });
  afterAll(() => gw?.close());

  it('a slow-loris client (headers one byte at a time) is answered 408 and disconnected within the header timeout', async () => {
    const conn = await rawConnection(gw.url);
    conn.socket.write('GET /api/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const drip = setInterval(() => conn.socket.writable && conn.socket.write('a'), 200);
    try {
      const elapsed = await conn.closed;
      expect(elapsed).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
      expect(elapsed).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
      expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(bodyOf(conn.received())).toEqual({ error: { code: 408, message: expect.any(String) } });
    } finally {
      clearInterval(drip);
    }
  });

  it('a client that sends part of a body and stalls is cut at the body timeout; nothing is forwarded', async () => {
    const account = await gw.createAccount(1);
    const { key } = await gw.createKey(account);
    const upstreamRequests = gw.provider.stats.byModel.get('mock-chat') ?? 0;
    const conn = await rawConnection(gw.url);
    const body = JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hello' }] });
    conn.socket.write(
      `POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    const elapsed = await conn.closed;
    expect(elapsed).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 100);
    expect(elapsed).toBeLessThan(BODY_TIMEOUT_MS + SLACK_MS);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(gw.provider.stats.byModel.get('mock-chat') ?? 0).toBe(upstreamRequests);
  });

  it('an idle kept-alive connection is closed after the keep-alive timeout', async () => {
    const conn = await rawConnection(gw.url);
    conn.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const elapsed = await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(elapsed).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 100);
    // Node adds a 1 s buffer to the socket timeout so a client honouring `Keep-Alive: timeout=` never races it.
    expect(elapsed).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 1_000 + SLACK_MS);
  });

  it('answers and streams longer than every edge timeout are not cut', async () => {
    const account = await gw.createAccount(1);
    const { key } = await gw.createKey(account);
    const [stream, slow] = await Promise.all([
      chatStream(gw, key, { model: 'test/long-stream', messages: [{ role: 'user', content: 'go' }] }),
      chat(gw, key, { model: 'test/slow-answer', messages: [{ role: 'user', content: 'go' }] }),
    ]);
    expect(stream.status).toBe(200);
    expect(stream.done).toBe(true);
    expect(stream.events.at(-1).usage.completion_tokens).toBe(50);
    expect(slow.status).toBe(200);
  });
});

describe('edge guard: per-client-IP burst limit', () => {
  let gw: TestGateway;
  let proxied: TestGateway;
  const BURST = 20;
  const REFILL_PER_SECOND = 2;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file.limits, { edge: { burst: BURST, per_second: REFILL_PER_SECOND } }),
    });
    proxied = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        Object.assign(file.limits, { edge: { burst: 3, per_second: 0.5 } });
        file.server.trust_proxy = true;
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await proxied?.close();
  });

  it('a flood from one address gets 429 (before authentication) while the gateway keeps serving', async () => {
    const started = Date.now();
    const account = await gw.createAccount(1);
    const { key } = await gw.createKey(account); // made before the flood: the admin API is under /api/v1 too
    const pool = new Agent({ connections: 50 });
    try {
      const flood = await Promise.all(
        Array.from({ length: 100 }, () =>
          request(`${gw.api}/models`, { dispatcher: pool }).then(async (r) => ({
            status: r.statusCode,
            headers: r.headers,
            text: await r.body.text(),
          })),
        ),
      );
      const refilled = Math.ceil(((Date.now() - started) / 1000) * REFILL_PER_SECOND);
      const ok = flood.filter((r) => r.status === 200).length;
      const limited = flood.filter((r) => r.status === 429);
      expect(ok).toBeGreaterThanOrEqual(BURST - 3); // the 3 admin calls above took from the same bucket
      expect(ok).toBeLessThanOrEqual(BURST - 3 + refilled); // plus what refilled while it ran
      expect(limited.length).toBe(100 - ok);
      const sample = limited[0]!;
      expect(JSON.parse(sample.text)).toEqual({
        error: {
          code: 429,
          message: expect.any(String),
          metadata: {
            error_type: 'rate_limit_exceeded',
            limit_source: 'edge',
            headers: {
              'X-RateLimit-Limit': String(BURST),
              'X-RateLimit-Remaining': '0',
              'X-RateLimit-Reset': expect.stringMatching(/^\d+$/),
            },
          },
        },
      });
      expect(Number(sample.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(sample.headers['x-ratelimit-limit']).toBe(String(BURST));

      // Still serving: health and metrics are outside the guard.
      for (let i = 0; i < 5; i++) expect((await request(`${gw.url}/healthz`)).statusCode).toBe(200);
      const metrics = await request(`${gw.url}/metrics`);
      expect(metrics.statusCode).toBe(200);
      expect(await metrics.body.text()).toMatch(/tollgate_rate_limited_total\{limit="edge"\} \d+/);

      // Refused before any auth work: a garbage key gets 429, not 401; a spoofed X-Forwarded-For changes nothing (trust_proxy off).
      // The calls above took time (the bucket refills 2 per second): empty it again first. On a loaded
      // host a token can refill between the drain and the garbage request (a 401 then): drain again.
      const upstreamRequests = gw.provider.stats.requests;
      let garbage: Awaited<ReturnType<typeof chat>> | null = null;
      for (let attempt = 0; attempt < 5 && garbage?.status !== 429; attempt++) {
        for (let i = 0; i < 20; i++) {
          const drained = await request(`${gw.api}/models`);
          await drained.body.dump();
          if (drained.statusCode === 429) break;
        }
        garbage = await chat(
          gw,
          'sk-tg-v1-garbage',
          { model: 'test/chat', messages: [] },
          { 'x-forwarded-for': '198.51.100.7' },
        );
      }
      // Refused by the guard, not by authentication, with the bucket empty.
      expect(garbage!.status).toBe(429);
      expect(garbage!.json.error.metadata.limit_source).toBe('edge');
      expect(gw.provider.stats.requests).toBe(upstreamRequests);

      // The bucket refills: after a pause the client is served again.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await chat(gw, key, { model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(
        200,
      );
    } finally {
      await pool.close();
    }
  });

  it('with server.trust_proxy the client is the X-Forwarded-For address: one client is limited, another is not', async () => {
    const get = (ip: string) =>
      request(`${proxied.api}/models`, { headers: { 'x-forwarded-for': ip } }).then(
        async (r) => (await r.body.dump(), r.statusCode),
      );
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await get('203.0.113.1'));
    expect(first).toEqual([200, 200, 200, 429]);
    expect(await get('203.0.113.2')).toBe(200);
  });
});
