import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type Dispatcher } from 'undici';
import { Cancellation } from '../core/cancellation.js';
import { AttemptAbort, createUpstreamAgent, readBounded, sendUpstream } from './upstream-client.js';

describe('sendUpstream (straight to the dispatcher)', () => {
  let server: Server;
  let base: string;
  const seen: { method: string; url: string; body: string; auth: string | undefined }[] = [];
  const closed: string[] = [];
  const agent = createUpstreamAgent();
  /** 32 MiB in 64 KiB writes, far past what the socket buffers hold; `blocked` once a write waits for the reader. */
  const bigState = { blocked: false, written: 0 };
  const BIG = 32 * 1024 * 1024;
  const big = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG) });
    const piece = Buffer.alloc(64 * 1024, 7);
    const pump = () => {
      while (bigState.written < BIG) {
        bigState.written += piece.length;
        if (!res.write(piece)) {
          bigState.blocked = true;
          res.once('drain', () => {
            bigState.blocked = false;
            pump();
          });
          return;
        }
      }
      res.end();
    };
    pump();
  };
  const send = (path: string, signal = new Cancellation(), dispatcher: Dispatcher = agent) =>
    sendUpstream(dispatcher, { url: `${base}${path}`, headers: {}, body: '{}' }, signal);
  const until = async (condition: () => boolean) => {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body, auth: req.headers.authorization });
        if (req.url!.startsWith('/hang')) return; // never answers
        if (req.url === '/big') return big(res);
        if (req.url === '/cut') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"a":1}\n\n');
          setTimeout(() => res.socket?.destroy(), 20); // the connection drops mid-body
          return;
        }
        if (req.url!.startsWith('/open')) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"a":1}\n\n'); // and then nothing: the body stays open
          res.on('close', () => closed.push(req.url!));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await agent.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends the POST to the URL’s path and query, with its headers and body, every time', async () => {
    for (const attempt of [1, 2]) {
      const response = await sendUpstream(
        agent,
        {
          url: `${base}/v1/chat/completions?api-version=${attempt}`,
          headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
          body: `{"n":${attempt}}`,
        },
        new Cancellation(),
      );
      expect(response.status).toBe(200);
      expect(await readBounded(response.body)).toBe('{"ok":true}');
    }
    expect(seen.slice(-2)).toEqual([
      { method: 'POST', url: '/v1/chat/completions?api-version=1', body: '{"n":1}', auth: 'Bearer k' },
      { method: 'POST', url: '/v1/chat/completions?api-version=2', body: '{"n":2}', auth: 'Bearer k' },
    ]);
  });

  it('refuses a URL that is not http or https, as undici’s request() did', async () => {
    await expect(
      sendUpstream(agent, { url: 'ftp://127.0.0.1/chat/completions', headers: {}, body: '{}' }, new Cancellation()),
    ).rejects.toThrow(/http or https/);
  });

  it('rejects with the cancellation’s reason when the attempt is aborted while waiting', async () => {
    const cancellation = new Cancellation();
    const sent = sendUpstream(agent, { url: `${base}/hang`, headers: {}, body: '{}' }, cancellation);
    while (!seen.some((r) => r.url === '/hang')) await new Promise((resolve) => setTimeout(resolve, 5));
    const reason = new AttemptAbort('first_token_timeout');
    cancellation.abort(reason);
    await expect(sent).rejects.toBe(reason);
  });

  it('stops reading the socket while the reader lags, and delivers every byte in order once it reads', async () => {
    const response = await send('/big');
    await until(() => bigState.blocked); // the server's writes wait: nothing drains the socket
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(bigState.written).toBeLessThan(BIG);
    // What was read off the socket meanwhile stays near the high-water mark (64 KiB), not the 32 MiB sent.
    expect(response.body.buffered).toBeLessThanOrEqual(1024 * 1024);
    let total = 0;
    for await (const chunk of response.body) {
      expect(chunk.every((byte) => byte === 7)).toBe(true);
      total += chunk.byteLength;
    }
    expect(total).toBe(BIG);
  });

  it('rejects the read that waits with undici’s socket error when the connection drops mid-body', async () => {
    const response = await send('/cut');
    const iterator = response.body[Symbol.asyncIterator]();
    expect(Buffer.from((await iterator.next()).value as Uint8Array).toString()).toBe('data: {"a":1}\n\n');
    await expect(iterator.next()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
  });

  it('drops what was not read yet when the connection fails, as a destroyed Readable does', async () => {
    const response = await send('/cut');
    await new Promise((resolve) => setTimeout(resolve, 100)); // the chunk arrived, then the connection dropped
    await expect(response.body.next()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(response.body.buffered).toBe(0);
  });

  it('rejects the read that waits with the abort reason when the attempt is cancelled after the headers', async () => {
    const cancellation = new Cancellation();
    const response = await send('/open?cancelled', cancellation);
    const iterator = response.body[Symbol.asyncIterator]();
    await iterator.next();
    const waiting = iterator.next();
    const reason = new AttemptAbort('idle_timeout');
    cancellation.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it('fails the unread rest of a body that already arrived when the attempt is cancelled', async () => {
    const cancellation = new Cancellation();
    const response = await send('/v1/complete', cancellation);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the whole answer is in, unread
    const reason = new AttemptAbort('client_closed');
    cancellation.abort(reason);
    await expect(response.body.next()).rejects.toBe(reason);
  });

  it('reports a dispatcher that throws as a rejection', async () => {
    const throwing = {
      dispatch() {
        throw new Error('dispatcher broke');
      },
    } as unknown as Dispatcher;
    await expect(send('/v1/x', new Cancellation(), throwing)).rejects.toThrow('dispatcher broke');
  });

  it('rejects at once when the attempt was cancelled before it was sent', async () => {
    const cancellation = new Cancellation();
    const reason = new AttemptAbort('client_closed');
    cancellation.abort(reason);
    await expect(send('/v1/chat/completions', cancellation)).rejects.toBe(reason);
  });

  it('closes the request when the reader leaves before the end, and a waiting read ends', async () => {
    const response = await send('/open?left');
    const iterator = response.body[Symbol.asyncIterator]();
    await iterator.next();
    const waiting = iterator.next();
    await iterator.return!();
    await expect(waiting).resolves.toEqual({ done: true, value: undefined });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    await until(() => closed.includes('/open?left')); // the upstream sees the connection go
  });

  it('rejects at once when cancelled while still queued for a connection', async () => {
    const single = new Agent({ connections: 1, pipelining: 1 });
    try {
      const first = sendUpstream(single, { url: `${base}/hang?queued`, headers: {}, body: '{}' }, new Cancellation());
      void first.catch(() => undefined); // ends when the agent is destroyed below
      await until(() => seen.some((r) => r.url === '/hang?queued')); // the one connection is taken
      const cancellation = new Cancellation();
      const queued = sendUpstream(single, { url: `${base}/v1/queued`, headers: {}, body: '{}' }, cancellation);
      const reason = new AttemptAbort('connect_timeout');
      cancellation.abort(reason);
      await expect(queued).rejects.toBe(reason);
    } finally {
      await single.destroy();
    }
    expect(seen.some((r) => r.url === '/v1/queued')).toBe(false);
  });
});
