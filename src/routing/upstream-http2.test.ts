/**
 * HTTP/2 to upstreams (`providers[].http2`): real h2c and TLS servers on loopback (node:http2 and
 * node:https), the agent main.ts builds, requests sent as attempts send them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import {
  constants,
  createSecureServer,
  createServer as createH2cServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import {
  connect as connectNet,
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { Cancellation } from '../core/cancellation.js';
import { failureFromThrown, isTransportError } from './failure.js';
import { HTTP2_STREAMS_PER_CONNECTION, Http2NotNegotiated, Http2Upstreams } from './http2-upstream.js';
import { createUpstreamAgent, sendUpstream, type UpstreamResponse } from './upstream-client.js';

/** What a test server counts: connections (sessions, for HTTP/2) and requests. */
interface Counts {
  connections: number;
  requests: number;
  /** Requests being answered right now, and the most at once on one connection. */
  open: Map<unknown, number>;
  maxOnOneConnection: number;
}

function newCounts(): Counts {
  return { connections: 0, requests: 0, open: new Map(), maxOnOneConnection: 0 };
}

/**
 * Answers `/stream?events=N&every=MS` with N SSE events, `/big` with 8 MiB the reader may take slowly,
 * `/reset` with a stream reset after one event, `/hang` never.
 */
function handler(counts: Counts) {
  return (req: Http2ServerRequest, res: Http2ServerResponse) => {
    counts.requests++;
    const session = req.stream.session;
    const open = (counts.open.get(session) ?? 0) + 1;
    counts.open.set(session, open);
    counts.maxOnOneConnection = Math.max(counts.maxOnOneConnection, open);
    res.on('close', () => counts.open.set(session, (counts.open.get(session) ?? 1) - 1));
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url, 'http://upstream');
      if (url.pathname === '/hang') return;
      if (url.pathname === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const piece = Buffer.alloc(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < BIG) {
            piece.fill(sent / piece.length);
            sent += piece.length;
            if (!res.write(Buffer.from(piece))) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (url.pathname === '/reset') {
        res.write('data: {"n":0}\n\n');
        setTimeout(() => req.stream.close(constants.NGHTTP2_INTERNAL_ERROR), 10);
        return;
      }
      const events = Number(url.searchParams.get('events') ?? 3);
      const every = Number(url.searchParams.get('every') ?? 5);
      let n = 0;
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        res.write(`data: {"n":${n}}\n\n`);
        if (++n === events) {
          clearInterval(timer);
          res.end('data: [DONE]\n\n');
        }
      }, every);
    });
  };
}

const BIG = 8 * 1024 * 1024;

async function listen(
  server: HttpServer | HttpsServer | Http2Server | Http2SecureServer | TlsServer | NetServer,
): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function readAll(response: UpstreamResponse): Promise<string> {
  let text = '';
  for await (const chunk of response.body) text += Buffer.from(chunk).toString('utf8');
  return text;
}

const post = (agent: Dispatcher, url: string, signal = new Cancellation()) =>
  sendUpstream(agent, { url, headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' }, signal);

/** What `promise` rejected with, or null when it resolved. */
const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => null,
    (error: unknown) => error,
  );

/** `count` requests to `url` at once, each read to its end. */
const burst = (agent: Dispatcher, url: string, count: number): Promise<string[]> =>
  Promise.all(Array.from({ length: count }, async () => readAll(await post(agent, url))));

const closeServer = (server: { close(callback: () => void): unknown }): Promise<void> =>
  new Promise((resolve) => server.close(() => resolve()));

const expectedStream = (events: number) =>
  Array.from({ length: events }, (_, n) => `data: {"n":${n}}\n\n`).join('') + 'data: [DONE]\n\n';

describe('HTTP/2 upstreams over h2c (prior knowledge)', () => {
  const counts = newCounts();
  const server = createH2cServer(handler(counts));
  server.on('session', () => counts.connections++);
  let base = '';

  beforeAll(async () => {
    base = `http://127.0.0.1:${await listen(server)}`;
  });
  afterAll(async () => {
    await closeServer(server);
  });

  it('carries a burst of concurrent streams on a few connections, each answer whole and in order', async () => {
    const agent = createUpstreamAgent({ http2: true });
    try {
      const before = counts.connections;
      // A cold pool: every request arrives while the first connection is still connecting.
      const answers = await burst(agent, `${base}/stream?events=5&every=10`, 250);
      expect(new Set(answers)).toEqual(new Set([expectedStream(5)]));
      expect(counts.connections - before).toBe(Math.ceil(250 / HTTP2_STREAMS_PER_CONNECTION));
      expect(counts.maxOnOneConnection).toBe(HTTP2_STREAMS_PER_CONNECTION);

      // Warm: the connections are reused, none is added.
      const again = await burst(agent, `${base}/stream?events=2&every=5`, 250);
      expect(new Set(again)).toEqual(new Set([expectedStream(2)]));
      expect(counts.connections - before).toBe(3);
    } finally {
      await agent.close();
    }
  });

  it('pauses a stream its reader lags on (flow control) and delivers every byte in order', async () => {
    const agent = createUpstreamAgent({ http2: true });
    try {
      const response = await post(agent, `${base}/big`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Unread: what sits in the body is bounded by its high-water mark plus the stream's window.
      expect(response.body.buffered).toBeLessThan(1024 * 1024);
      let offset = 0;
      for await (const chunk of response.body) {
        const bytes = Buffer.from(chunk);
        for (let i = 0; i < bytes.length; i += 4096) {
          expect(bytes[i]).toBe(Math.floor((offset + i) / (64 * 1024)) % 256);
        }
        offset += bytes.length;
      }
      expect(offset).toBe(BIG);
    } finally {
      await agent.close();
    }
  });

  it('cancelling one attempt resets its stream only: the others on the connection carry on', async () => {
    const agent = createUpstreamAgent({ http2: true });
    try {
      const before = counts.connections;
      const warm = await post(agent, `${base}/stream?events=1`);
      await readAll(warm);
      const signal = new Cancellation();
      const hanging = post(agent, `${base}/hang`, signal);
      const other = post(agent, `${base}/stream?events=20&every=10`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      signal.abort(new Error('attempt cancelled'));
      await expect(hanging).rejects.toThrow('attempt cancelled');
      expect(await readAll(await other)).toBe(expectedStream(20));
      expect(counts.connections - before).toBe(1);
    } finally {
      await agent.close();
    }
  });

  it('a stream the server resets mid-body fails its read as a transport error (a connection failure)', async () => {
    const agent = createUpstreamAgent({ http2: true });
    try {
      const signal = new Cancellation();
      const response = await post(agent, `${base}/reset`, signal);
      const error = await rejection(readAll(response));
      expect(error).toBeInstanceOf(Error);
      expect(isTransportError(error, signal)).toBe(true);
      expect(failureFromThrown(error, signal).type).toBe('connection');
    } finally {
      await agent.close();
    }
  });

  it('an HTTP/1.1-only server at an h2c URL fails the attempt as a transport error, not a hang', async () => {
    const plain = createHttpServer((_req, res) => res.end('{}'));
    const port = await listen(plain);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const signal = new Cancellation();
      const error = await rejection(post(agent, `http://127.0.0.1:${port}/v1/chat/completions`, signal));
      expect(error).toBeInstanceOf(Error);
      expect(isTransportError(error, signal)).toBe(true);
    } finally {
      await agent.close();
      plain.closeAllConnections();
      await closeServer(plain);
    }
  });

  it('a graceful GOAWAY lets the streams it covers finish; the ones it refused are sent again elsewhere', async () => {
    // As nginx's keepalive_requests: after 60 requests a connection is closed gracefully (GOAWAY
    // NO_ERROR, last stream id = the 60th), while the client may already have sent more on it.
    const local = newCounts();
    const perSession = new Map<unknown, number>();
    const retiring = createH2cServer((req, res) => {
      const session = req.stream.session;
      const n = (perSession.get(session) ?? 0) + 1;
      perSession.set(session, n);
      if (n === 60) session?.close();
      handler(local)(req, res);
    });
    retiring.on('session', () => local.connections++);
    const port = await listen(retiring);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const answers = await burst(agent, `http://127.0.0.1:${port}/stream?events=10&every=10`, 150);
      expect(new Set(answers)).toEqual(new Set([expectedStream(10)]));
      expect(local.requests).toBe(150);
      expect(local.connections).toBeGreaterThanOrEqual(3);
    } finally {
      await agent.close();
      await closeServer(retiring);
    }
  });

  it('keeps to the server’s SETTINGS_MAX_CONCURRENT_STREAMS: more connections, nothing refused', async () => {
    const local = newCounts();
    const narrow = createH2cServer({ settings: { maxConcurrentStreams: 10 } }, handler(local));
    narrow.on('session', () => local.connections++);
    const port = await listen(narrow);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const answers = await burst(agent, `http://127.0.0.1:${port}/stream?events=5&every=10`, 100);
      expect(new Set(answers)).toEqual(new Set([expectedStream(5)]));
      expect(local.requests).toBe(100);
      expect(local.maxOnOneConnection).toBe(10);
      // Ten when all 100 are in flight at once; fewer when the first streams end before the last
      // requests are sent (a loaded machine): never more than the burst needs.
      expect(local.connections).toBeGreaterThanOrEqual(2);
      expect(local.connections).toBeLessThanOrEqual(10);
    } finally {
      await agent.close();
      await closeServer(narrow);
    }
  });

  it('leaves out the connection-specific headers HTTP/2 forbids instead of failing (or crashing) on them', async () => {
    const seen: Record<string, unknown>[] = [];
    const strict = createH2cServer((req, res) => {
      seen.push({ ...req.headers });
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const port = await listen(strict);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const response = await sendUpstream(
        agent,
        {
          url: `http://127.0.0.1:${port}/v1/chat/completions`,
          headers: {
            'content-type': 'application/json',
            Connection: 'keep-alive',
            'keep-alive': 'timeout=5',
            'proxy-connection': 'keep-alive',
            'transfer-encoding': 'chunked',
            te: 'gzip',
            'x-provider-header': 'kept',
          },
          body: '{}',
        },
        new Cancellation(),
      );
      expect(await readAll(response)).toBe('ok');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ 'content-type': 'application/json', 'x-provider-header': 'kept' });
      for (const name of ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te'])
        expect(seen[0]).not.toHaveProperty(name);
    } finally {
      await agent.close();
      await closeServer(strict);
    }
  });

  it('closes a connection left idle, and opens a new one when needed', async () => {
    const local = newCounts();
    let closed = 0;
    const idle = createH2cServer(handler(local));
    idle.on('session', (session) => {
      local.connections++;
      session.on('close', () => closed++);
    });
    const port = await listen(idle);
    const agent = new Http2Upstreams({ idleMs: 100 });
    try {
      expect(await readAll(await post(agent, `http://127.0.0.1:${port}/stream?events=1`))).toBe(expectedStream(1));
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(closed).toBe(1);
      expect(await readAll(await post(agent, `http://127.0.0.1:${port}/stream?events=1`))).toBe(expectedStream(1));
      expect(local.connections).toBe(2);
    } finally {
      await agent.close();
      await closeServer(idle);
    }
  });

  it('a refused connection fails every waiting attempt at once, as a transport error', async () => {
    const probe = createHttpServer();
    const port = await listen(probe);
    await closeServer(probe); // nothing listens there now
    const agent = createUpstreamAgent({ http2: true });
    try {
      // One cancellation per attempt, as in the gateway (a shared one would collect 150 listeners).
      const signals = Array.from({ length: 150 }, () => new Cancellation());
      const started = Date.now();
      const errors = await Promise.all(
        signals.map((signal) => rejection(post(agent, `http://127.0.0.1:${port}/v1/chat/completions`, signal))),
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      errors.forEach((error, i) => {
        expect(isTransportError(error, signals[i]!)).toBe(true);
        expect(failureFromThrown(error, signals[i]!).type).toBe('connection');
      });
    } finally {
      await agent.close();
    }
  });

  it('a connection lost before the response headers, or in the middle of the body, fails the attempt (no hang, no cut answer taken for whole)', async () => {
    let raw: Socket | null = null; // the TCP connection itself (the session's socket is a guarded proxy)
    const lossy = createH2cServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/early') return raw?.destroy();
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"n":0}\n\n');
        setTimeout(() => raw?.destroy(), 20);
      });
    });
    lossy.on('connection', (socket: Socket) => (raw = socket));
    const port = await listen(lossy);
    try {
      for (const path of ['/early', '/midway']) {
        const agent = createUpstreamAgent({ http2: true });
        const signal = new Cancellation();
        const outcome = await Promise.race([
          post(agent, `http://127.0.0.1:${port}${path}`, signal)
            .then(readAll)
            .then(
              (text) => ({ text }),
              (error: unknown) => ({ error }),
            ),
          new Promise((resolve) => setTimeout(() => resolve('still pending after 3 s'), 3_000)),
        ]);
        await agent.destroy();
        expect(outcome, path).toHaveProperty('error');
        expect(isTransportError((outcome as { error: unknown }).error, signal), path).toBe(true);
      }
    } finally {
      await closeServer(lossy);
    }
  });

  it('a connection that stopped answering is closed once an attempt on it is given up (PING), and the next goes elsewhere', async () => {
    const local = newCounts();
    const upstream = createH2cServer(handler(local));
    upstream.on('session', () => local.connections++);
    const upstreamPort = await listen(upstream);
    // A TCP relay in between that can go silent, as a connection through a dead NAT or peer does.
    const pairs: [Socket, Socket][] = [];
    const relay = createNetServer((client) => {
      const server = connectNet(upstreamPort, '127.0.0.1');
      client.pipe(server);
      server.pipe(client);
      client.on('error', () => undefined);
      server.on('error', () => undefined);
      pairs.push([client, server]);
    });
    const port = await listen(relay);
    const agent = new Http2Upstreams({ pingTimeoutMs: 200 });
    try {
      expect(await readAll(await post(agent, `http://127.0.0.1:${port}/stream?events=1`))).toBe(expectedStream(1));
      for (const [client, server] of pairs) {
        client.unpipe(server);
        server.unpipe(client);
        client.pause();
        server.pause();
      }
      const signal = new Cancellation();
      const stuck = post(agent, `http://127.0.0.1:${port}/stream?events=1`, signal);
      setTimeout(() => signal.abort(new Error('first token timeout')), 100);
      await expect(stuck).rejects.toThrow('first token timeout');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await readAll(await post(agent, `http://127.0.0.1:${port}/stream?events=1`))).toBe(expectedStream(1));
      expect(pairs).toHaveLength(2);
    } finally {
      await agent.destroy();
      for (const pair of pairs) for (const socket of pair) socket.destroy();
      await closeServer(relay);
      await closeServer(upstream);
    }
  });

  it('does not send again a request a GOAWAY with an error code may have covered', async () => {
    let requests = 0;
    const failing = createH2cServer((req) => {
      requests++;
      req.resume();
      req.on('end', () => req.stream.session?.goaway(constants.NGHTTP2_REFUSED_STREAM, req.stream.id));
    });
    const port = await listen(failing);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const signal = new Cancellation();
      const error = await rejection(post(agent, `http://127.0.0.1:${port}/x`, signal));
      expect(isTransportError(error, signal)).toBe(true);
      expect(requests).toBe(1);
    } finally {
      await agent.destroy();
      await closeServer(failing);
    }
  });

  it('a server that allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0) fails the attempts at once, on a bounded number of connections', async () => {
    let connections = 0;
    const closedShop = createH2cServer({ settings: { maxConcurrentStreams: 0 } }, (_req, res) => res.end());
    closedShop.on('session', () => connections++);
    const port = await listen(closedShop);
    const agent = createUpstreamAgent({ http2: true });
    try {
      const errors = await Promise.all(
        Array.from({ length: 200 }, () => rejection(post(agent, `http://127.0.0.1:${port}/x`))),
      );
      for (const error of errors) expect((error as { code?: string } | null)?.code).toBe('ERR_HTTP2_NO_STREAMS');
      expect(connections).toBeLessThanOrEqual(2);
    } finally {
      await agent.destroy();
      await closeServer(closedShop);
    }
  });

  it('HTTP/1.1 agents still send one request per connection at a time', async () => {
    const counts1 = { connections: 0, maxOpen: 0, open: 0 };
    // Answers are held until all ten are in (or 3 s passed): on a busy machine a 20 ms answer could
    // end before the last request arrived, and the count would say nothing about pipelining.
    const held: (() => void)[] = [];
    const release = () => held.splice(0).forEach((answer) => answer());
    const plain = createHttpServer((req, res) => {
      counts1.open++;
      counts1.maxOpen = Math.max(counts1.maxOpen, counts1.open);
      req.resume();
      held.push(() => {
        counts1.open--;
        res.end('ok');
      });
      if (counts1.open === 10) release();
    });
    const fallback = setTimeout(release, 3000);
    plain.on('connection', () => counts1.connections++);
    const port = await listen(plain);
    const agent = createUpstreamAgent();
    try {
      const answers = await burst(agent, `http://127.0.0.1:${port}/x`, 10);
      expect(answers).toEqual(Array(10).fill('ok'));
      // Ten at once took ten connections: nothing was pipelined behind another request.
      expect(counts1.connections).toBe(10);
      expect(counts1.maxOpen).toBe(10);
    } finally {
      clearTimeout(fallback);
      release();
      await agent.close();
      plain.closeAllConnections();
      await closeServer(plain);
    }
  });
});

describe('HTTP/2 upstreams over TLS (ALPN)', () => {
  let dir = '';
  let tls: { key: Buffer; cert: Buffer } = { key: Buffer.alloc(0), cert: Buffer.alloc(0) };

  beforeAll(() => {
    // A throwaway self-signed certificate for 127.0.0.1 (openssl, installed by .ci/run when missing).
    dir = mkdtempSync(join(tmpdir(), 'tollgate-h2-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    tls = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('multiplexes requests on a connection whose TLS handshake chose h2', async () => {
    const counts = newCounts();
    const server = createSecureServer({ ...tls }, handler(counts));
    server.on('session', () => counts.connections++);
    const port = await listen(server);
    const agent = createUpstreamAgent({ http2: true, tls: { ca: tls.cert } });
    try {
      const answers = await burst(agent, `https://127.0.0.1:${port}/stream?events=3`, 50);
      expect(new Set(answers)).toEqual(new Set([expectedStream(3)]));
      expect(counts.connections).toBe(1);
      expect(counts.maxOnOneConnection).toBe(50);
    } finally {
      await agent.close();
      await closeServer(server);
    }
  });

  it('refuses a TLS server that ignores ALPN altogether', async () => {
    let connections = 0;
    const server = createTlsServer({ ...tls }, (socket) => {
      connections++;
      socket.on('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}'));
      socket.on('error', () => undefined);
    });
    const port = await listen(server);
    const agent = createUpstreamAgent({ http2: true, tls: { ca: tls.cert } });
    try {
      const signal = new Cancellation();
      const error = await rejection(post(agent, `https://127.0.0.1:${port}/v1/chat/completions`, signal));
      expect(error).toBeInstanceOf(Http2NotNegotiated);
      expect(failureFromThrown(error, signal).type).toBe('connection');
      expect(connections).toBeLessThanOrEqual(1); // the client may hang up before the server saw the handshake end
    } finally {
      await agent.close();
      await closeServer(server);
    }
  });

  it('refuses a server that chose HTTP/1.1 (no fallback that would pipeline requests on one connection)', async () => {
    let requests = 0;
    const server = createHttpsServer({ ...tls }, (_req, res) => {
      requests++;
      res.end('{}');
    });
    const port = await listen(server);
    const agent = createUpstreamAgent({ http2: true, tls: { ca: tls.cert } });
    try {
      const signal = new Cancellation();
      const error = await rejection(post(agent, `https://127.0.0.1:${port}/v1/chat/completions`, signal));
      expect(error).toBeInstanceOf(Http2NotNegotiated);
      expect((error as Http2NotNegotiated).message).toContain('did not negotiate HTTP/2');
      expect(isTransportError(error, signal)).toBe(true);
      expect(failureFromThrown(error, signal)).toMatchObject({
        type: 'connection',
        message: 'Provider connection failed: the provider does not speak HTTP/2',
      });
      expect(requests).toBe(0);
    } finally {
      await agent.close();
      server.closeAllConnections();
      await closeServer(server);
    }
  });
});
