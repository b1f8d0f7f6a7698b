/**
 * SseSink against a real socket: a caller that stops reading (its socket paused, the kernel buffers
 * full) must not hold a write, and with it the upstream, forever.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SseSink } from './sse-sink.js';

const BIG = { content: 'x'.repeat(256 * 1024) };

let server: Server | undefined;
let client: Socket | undefined;

afterEach(async () => {
  client?.destroy();
  client = undefined;
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
  server = undefined;
});

/**
 * A server whose one request is handed to the test, and a raw client that sends it: one that never
 * reads, or one that collects what arrives (`received()`, the raw bytes as latin1).
 */
async function rawCaller(reads: boolean): Promise<{ res: ServerResponse; received: () => string }> {
  let handed: (res: ServerResponse) => void;
  const response = new Promise<ServerResponse>((resolve) => (handed = resolve));
  server = createServer((_req, res) => handed(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  let raw = '';
  if (reads) {
    client.setEncoding('latin1');
    client.on('data', (data: string) => (raw += data));
  }
  await new Promise<void>((resolve) => client!.once('connect', resolve));
  if (!reads) client.pause(); // never reads
  client.write('POST /api/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
  return { res: await response, received: () => raw };
}

async function stalledCaller(): Promise<ServerResponse> {
  return (await rawCaller(false)).res;
}

describe('SseSink drain timeout', () => {
  it('destroys the response when the caller does not read within the drain timeout', async () => {
    const res = await stalledCaller();
    const closed = new Promise<number>((resolve) => res.once('close', () => resolve(Date.now())));
    const sink = new SseSink(res, {}, Date.now, { drainTimeoutMs: 300 });
    let writes = 0;
    let blockedAt = 0;
    const started = Date.now();
    // Write until a write has to wait for 'drain' (the socket buffers are full), then past it.
    while (!sink.closed && Date.now() - started < 20_000) {
      const before = Date.now();
      await sink.write(BIG);
      writes++;
      if (Date.now() - before >= 250) blockedAt = before;
    }
    expect(sink.closed).toBe(true);
    expect(res.destroyed).toBe(true);
    expect(writes).toBeGreaterThan(1);
    const closedAt = await closed;
    // The blocked write waited about the drain timeout, no more.
    expect(blockedAt).toBeGreaterThan(0);
    expect(closedAt - blockedAt).toBeGreaterThanOrEqual(290);
    expect(closedAt - blockedAt).toBeLessThan(5_000);
    // Later writes are no-ops.
    await sink.write(BIG);
    await sink.done();
  });

  it('keeps waiting for a reader that reads slowly but within the timeout', async () => {
    const res = await stalledCaller();
    const sink = new SseSink(res, {}, Date.now, { drainTimeoutMs: 2_000 });
    // Fill the buffers until a write blocks, then let the client read: the write resumes, nothing is destroyed.
    let pending: Promise<void> | null = null;
    for (let i = 0; i < 400 && !pending; i++) {
      const write = sink.write(BIG);
      const blocked = await Promise.race([
        write.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), 100)),
      ]);
      if (blocked) pending = write;
    }
    expect(pending).not.toBeNull();
    client!.resume();
    await pending;
    expect(sink.closed).toBe(false);
    await sink.done();
    expect(res.writableEnded).toBe(true);
  });
});

describe('SseSink writes', () => {
  it('sends the events written in one turn of the event loop as one chunk on the wire', async () => {
    const { res, received } = await rawCaller(true);
    const sink = new SseSink(res, {}, Date.now);

    void sink.writeJson('{"a":1}');
    void sink.writeJson('{"b":2}');
    void sink.write({ c: 3 });
    await new Promise((resolve) => setImmediate(resolve)); // the next turn
    void sink.writeJson('{"d":4}');
    const errors: unknown[] = [];
    res.on('error', (error) => errors.push(error));
    await sink.done();
    // Nothing is written after the end (it would fail on the next tick with write-after-end).
    await sink.writeJson('{"late":true}');
    await sink.done();
    while (!received().endsWith('0\r\n\r\n')) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(errors).toEqual([]);

    // The chunked body: <hex size>\r\n<data>\r\n ..., then 0\r\n\r\n.
    const chunks: string[] = [];
    const raw = received();
    let rest = raw.slice(raw.indexOf('\r\n\r\n') + 4);
    for (;;) {
      const eol = rest.indexOf('\r\n');
      const size = parseInt(rest.slice(0, eol), 16);
      if (size === 0) break;
      chunks.push(rest.slice(eol + 2, eol + 2 + size));
      rest = rest.slice(eol + 2 + size + 2);
    }
    expect(chunks).toEqual([
      'data: {"a":1}\n\ndata: {"b":2}\n\ndata: {"c":3}\n\n',
      'data: {"d":4}\n\ndata: [DONE]\n\n',
    ]);
  });
});
