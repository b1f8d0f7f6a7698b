/**
 * After [DONE] the reader drains what is left of the body so the keep-alive connection returns to
 * the pool (stream-reader.ts, `drain`). An upstream that keeps the response open after [DONE] and
 * trickles SSE comments must still be cut promptly: the drain has one overall deadline (it used to
 * wait 1 s per chunk, so the request, its socket and the agent's close() — what `tollgate serve`
 * awaits on shutdown — were held for as long as the trickle lasted).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';
import { Cancellation } from '../src/core/cancellation.js';
import { openAiAdapter } from '../src/providers/openai/adapter.js';
import { UpstreamStream } from '../src/routing/stream-reader.js';
import { AttemptAbort, createUpstreamAgent, sendUpstream } from '../src/routing/upstream-client.js';

const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'u', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('an upstream that keeps the body open after [DONE]', () => {
  let server: Server;
  let gw: TestGateway;
  let key: string;
  /** When each answered response closed on the server's side (ms since epoch), by request number. */
  const closedAt: number[] = [];
  const timers = new Set<NodeJS.Timeout>();

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        const n = closedAt.length;
        closedAt.push(0);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(event({ role: 'assistant' }) + event({ content: 'Hi' }) + event({}, 'stop') + 'data: [DONE]\n\n');
        // …and then a comment every 200 ms, never ending the response.
        const timer = setInterval(() => res.write(': keep-alive\n\n'), 200);
        timers.add(timer);
        res.on('close', () => {
          clearInterval(timer);
          closedAt[n] = Date.now();
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ id: 'trickle', name: 'Trickle', kind: 'openai', base_url: url, timeouts: {} });
        file.models.push({
          id: 'test/trickle',
          name: 'trickle',
          context_length: 8192,
          endpoints: [{ provider: 'trickle', model: 't', pricing: { prompt: '0.000001', completion: '0.000002' } }],
        });
      },
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });

  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gw.close();
  });

  it('the caller gets the whole answer', async () => {
    const r = await chatStream(gw, key, { model: 'test/trickle', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(200);
    expect(r.done).toBe(true);
  });

  it('the upstream request is ended soon after [DONE] (the drain has one overall deadline), not held open by the trickle', async () => {
    // (the request of the test above is request 0)
    await vi.waitFor(() => expect(closedAt[0], 'the upstream response was never closed').toBeGreaterThan(0), {
      timeout: 5000,
      interval: 50,
    });
  }, 10_000);
});

describe('the drain after [DONE] and the agent close() on shutdown', () => {
  it("an agent's close() (what `tollgate serve` awaits on stop) is not held by a trickling body after [DONE]", async () => {
    const timers = new Set<NodeJS.Timeout>();
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(event({ content: 'Hi' }, 'stop') + 'data: [DONE]\n\n');
        const timer = setInterval(() => res.write(': keep-alive\n\n'), 200);
        timers.add(timer);
        res.on('close', () => clearInterval(timer));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = createUpstreamAgent();
    const signal = new Cancellation();
    const response = await sendUpstream(
      agent,
      {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`,
        headers: {},
        body: '{}',
      },
      signal,
    );
    const stream = UpstreamStream.fromBody(
      { body: response.body, adapter: openAiAdapter, armIdle: () => () => undefined },
      { signal, abort: (reason) => signal.abort(new AttemptAbort(reason)) },
    );
    expect(await stream.read(() => undefined)).toEqual({ kind: 'done' });
    const closed = await Promise.race([
      agent.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 4 s'), 4000)),
    ]);
    for (const timer of timers) clearInterval(timer);
    server.closeAllConnections();
    server.close();
    expect(closed).toBe('closed');
  }, 10_000);
});
