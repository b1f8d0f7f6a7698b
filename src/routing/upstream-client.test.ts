import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cancellation } from '../core/cancellation.js';
import { AttemptAbort, createUpstreamAgent, readBounded, sendUpstream } from './upstream-client.js';

describe('sendUpstream (straight to the dispatcher)', () => {
  let server: Server;
  let base: string;
  const seen: { method: string; url: string; body: string; auth: string | undefined }[] = [];
  const agent = createUpstreamAgent();

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body, auth: req.headers.authorization });
        if (req.url!.startsWith('/hang')) return; // never answers
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
});
