/**
 * A request refused before its body is read is answered with `Connection: close`; the connection is
 * then closed in stages (http/lingering-close.ts): the answer, the write side's close, the rest of the
 * body read and thrown away, then the socket. Closed at once, a client still sending got a reset on
 * its next write and lost the answer (Python's `http.client` and `requests` send the whole body
 * before they read: every 8 MiB upload with a wrong key ended in `BrokenPipeError`).
 */
import { connect, type Socket } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, getJson, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';
import { lingerBeforeClose, type LingerLimits } from '../src/http/lingering-close.js';

const EIGHT_MIB = 8 * 1024 * 1024;
/** Under the body limit (4 MiB here), so the key decides. */
const UNDER_LIMIT = 4 * 1024 * 1024 - 64 * 1024;

interface Upload {
  /** Every write the kernel took (false: a write failed, as after a reset). */
  allWritten: boolean;
  /** What arrived, read only after the last write (as a client that sends before it reads). */
  received: string;
}

/**
 * Sends `head`, `body` and `after` without reading anything, then reads what the server answered.
 * `keepOpen`: the client never closes its side (as a client that goes on pipelining would); the
 * exchange ends once the answer has arrived and the server had `keepOpen` ms to do more.
 */
function sendThenRead(url: string, head: string, body: Buffer, after = '', keepOpen = 0): Promise<Upload> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let received = '';
    let allWritten = true;
    const socket: Socket = connect({ host: hostname, port: Number(port), allowHalfOpen: keepOpen > 0 });
    // Nothing is read until everything is written: the answer waits in the kernel's buffer.
    socket.pause();
    socket.on('error', () => (allWritten = false));
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve({ allWritten, received }));
    socket.write(head);
    for (let offset = 0; offset < body.length; offset += 64 * 1024)
      socket.write(body.subarray(offset, offset + 64 * 1024));
    socket.write(after, (error) => {
      if (error) allWritten = false;
      socket.resume();
      // The client is done: its FIN, after which the server closes at once.
      if (keepOpen === 0) socket.end();
      else setTimeout(() => socket.destroy(), keepOpen);
    });
  });
}

function head(fields: Record<string, string>): string {
  const lines = Object.entries({ host: '127.0.0.1', 'content-type': 'application/json', ...fields });
  return `POST /api/v1/chat/completions HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

describe('lingering close after a refusal', () => {
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file.server, { body_limit_bytes: 4 * 1024 * 1024 }),
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw.close());

  it('a client that sends its whole ~4 MiB body before reading gets the 401, not a reset', async () => {
    const body = Buffer.alloc(UNDER_LIMIT, 'a');
    const upload = await sendThenRead(
      gw.url,
      head({ authorization: 'Bearer sk-tg-v1-not-a-key', 'content-length': String(body.length) }),
      body,
    );
    expect(upload.allWritten).toBe(true);
    expect(upload.received).toMatch(/^HTTP\/1\.1 401 /);
    expect(upload.received).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('the same for a body over the limit (413 from Content-Length) from a valid key', async () => {
    const body = Buffer.alloc(EIGHT_MIB, 'a');
    const upload = await sendThenRead(
      gw.url,
      head({ authorization: `Bearer ${key}`, 'content-length': String(body.length) }),
      body,
    );
    expect(upload.allWritten).toBe(true);
    expect(upload.received).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('the same for a body refused while it is read (400 for nesting), whose reader gave up on it', async () => {
    // The scanner's refusal left the request paused, Node stopped reading the socket, and the idle
    // clock reset the connection with the rest of the body unread: a broken pipe, again (outside re-check).
    const body = Buffer.alloc(UNDER_LIMIT, '[');
    const upload = await sendThenRead(
      gw.url,
      head({ authorization: `Bearer ${key}`, 'content-length': String(body.length) }),
      body,
    );
    expect(upload.allWritten).toBe(true);
    expect(upload.received).toMatch(/^HTTP\/1\.1 400 /);
    expect(upload.received).toContain('JSON body nests deeper than 64 levels');
  });

  it('a request pipelined after the refused one is not served (its answer could never be written)', async () => {
    const requestsBefore = gw.provider.stats.requests;
    const chatBody = JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] });
    const pipelined =
      head({ authorization: `Bearer ${key}`, 'content-length': String(Buffer.byteLength(chatBody)) }) + chatBody;
    const body = Buffer.alloc(256 * 1024, 'a');
    const upload = await sendThenRead(
      gw.url,
      head({ authorization: 'Bearer sk-tg-v1-not-a-key', 'content-length': String(body.length) }),
      body,
      pipelined,
      // Longer than the gateway lingers (2 s without a byte): it had all that time to serve it.
      2_500,
    );
    expect(upload.received).toMatch(/^HTTP\/1\.1 401 /);
    // One answer only, and nothing reached the provider or the key's usage.
    expect(upload.received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(gw.provider.stats.requests).toBe(requestsBefore);
    const { json } = await getJson(gw, '/key', key);
    expect(json.data.usage).toBe(0);
  });
});

describe('lingerBeforeClose bounds', () => {
  const servers: Server[] = [];
  afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  /** A server that refuses from the headers (the body unread), lingering within `limits`. */
  async function refusingServer(limits: LingerLimits) {
    const server = createServer((_request, response) => {
      response.writeHead(401, { connection: 'close', 'content-length': '2' });
      response.end('no');
    });
    servers.push(server);
    const lingering = lingerBeforeClose(server, limits);
    let serverSide: Promise<void> = Promise.resolve();
    server.on('connection', (socket: Socket) => {
      serverSide = new Promise((resolve) => socket.once('close', () => resolve()));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;

    /**
     * Sends headers announcing a large body, calls `onAnswer` when the 401 arrives, and returns the
     * order of events up to the server's close of its socket. The client never closes its side.
     */
    async function exchange(onAnswer: (socket: Socket) => void): Promise<string[]> {
      const events: string[] = [];
      const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => {
        if (!chunk.toString().startsWith('HTTP/1.1 401')) return;
        events.push('answer');
        onAnswer(socket);
      });
      socket.on('end', () => events.push('server closed its write side'));
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 50));
      // A server that never closes fails the test rather than hangs it.
      const gaveUp = new Promise<void>((resolve) => setTimeout(() => (events.push('never closed'), resolve()), 5_000));
      await Promise.race([serverSide.then(() => events.push('server closed the socket')), gaveUp]);
      socket.destroy();
      return events;
    }
    return { exchange, lingering };
  }

  /** Writes a KiB every 20 ms until the connection is gone; the count of writes the kernel took. */
  function trickle(socket: Socket, onWrite: () => void): void {
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer);
      socket.write(Buffer.alloc(1024, 'a'), (error) => error || onWrite());
    }, 20);
    socket.once('close', () => clearInterval(timer));
  }

  it('a client that stops sending is closed once idle for idleMs', async () => {
    const { exchange } = await refusingServer({ idleMs: 100, maxMs: 500 });
    const events = await exchange(() => undefined);
    expect(events).toEqual(['answer', 'server closed its write side', 'server closed the socket']);
  });

  it('a client that keeps trickling is read past idleMs, and closed after maxMs', async () => {
    const { exchange } = await refusingServer({ idleMs: 100, maxMs: 500 });
    let written = 0;
    const events = await exchange((socket) => trickle(socket, () => written++));
    expect(events).toEqual(['answer', 'server closed its write side', 'server closed the socket']);
    // Writes kept going well past the idle window (100 ms at one write every 20 ms): the server read them.
    expect(written).toBeGreaterThan(10);
  });

  it('stop (the server closing) ends a lingering connection that would otherwise linger on', async () => {
    // Lingering far longer than the exchange waits: only stop can end it.
    const { exchange, lingering } = await refusingServer({ idleMs: 60_000, maxMs: 60_000 });
    const events = await exchange((socket) => {
      trickle(socket, () => undefined);
      setTimeout(() => lingering.stop(), 100);
    });
    expect(events).toEqual(['answer', 'server closed its write side', 'server closed the socket']);
  });
});
