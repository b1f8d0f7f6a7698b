/**
 * An SSE `event: error` whose data is not JSON (a plain-text reason, as some SSE servers and proxies
 * send) is an in-band error all the same: the stream ends at once with the provider's reason, rather
 * than the event being skipped as malformed until the stall timer fires.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cancellation } from '../src/core/cancellation.js';
import { openAiAdapter } from '../src/providers/openai/adapter.js';
import { UpstreamStream } from '../src/routing/stream-reader.js';
import { AttemptAbort, createUpstreamAgent, sendUpstream } from '../src/routing/upstream-client.js';

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'u', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

describe('`event: error` with a non-JSON reason', () => {
  let server: Server;
  let base = '';
  const agent = createUpstreamAgent();
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const reason = req.url === '/json' ? '{"message":"model overloaded"}' : 'model overloaded';
        res.write(chunk('Hel') + `event: error\ndata: ${reason}\n\n`);
        // …and the connection stays open.
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await agent.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** How a read of the whole stream ends, with a 1.5 s stall timer as the attempt's would be. */
  async function endOf(path: string) {
    const signal = new Cancellation();
    const response = await sendUpstream(agent, { url: `${base}${path}`, headers: {}, body: '{}' }, signal);
    const stream = UpstreamStream.fromBody(
      {
        body: response.body,
        adapter: openAiAdapter,
        armIdle: () => {
          const timer = setTimeout(() => signal.abort(new AttemptAbort('idle_timeout')), 1500);
          return () => clearTimeout(timer);
        },
      },
      { signal, abort: (reason) => signal.abort(new AttemptAbort(reason)) },
    );
    const end = await stream.read(() => undefined);
    return end.kind === 'broken' ? { kind: end.kind, cause: end.cause, type: end.failure.type } : { kind: end.kind };
  }

  it('a JSON reason ends the read at once as an in-band error', async () => {
    expect(await endOf('/json')).toEqual({ kind: 'broken', cause: 'event', type: 'server' });
  });

  it('a plain-text reason ends the read at once as an in-band error too, not as a stall', async () => {
    expect(await endOf('/text')).toMatchObject({ kind: 'broken', cause: 'event' });
  });
});
