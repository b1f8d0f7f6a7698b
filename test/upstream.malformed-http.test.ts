/**
 * An upstream whose HTTP/1.1 response undici's parser rejects (a bad status line, a bad chunk size
 * mid-body) is the provider's fault, like a reset: it fails over before the commit point and ends a
 * committed stream as the provider's error, never as our own internal error.
 */
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICING = { prompt: '0.000001', completion: '0.000002' };

/** Answers each request (once its headers arrived) by the upstream model name in the JSON body. */
function rawUpstream(): Server {
  return createNetServer((socket: Socket) => {
    let seen = '';
    socket.on('data', (data: Buffer) => {
      seen += data.toString('latin1');
      const bodyAt = seen.indexOf('\r\n\r\n');
      if (bodyAt === -1 || !seen.includes('"model"')) return;
      const model = /"model":"([^"]+)"/.exec(seen)?.[1];
      seen = '';
      if (model === 'garbage-status') {
        socket.write('HTTP/1.1 2xx Whatever\r\n\r\n');
        return;
      }
      if (model === 'bad-chunk' || model === 'reset-chunk') {
        const role = `data: ${JSON.stringify({ id: 'x', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] })}\n\n`;
        const text = `data: ${JSON.stringify({ id: 'x', choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }] })}\n\n`;
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n');
        for (const event of [role, text]) socket.write(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`);
        if (model === 'reset-chunk') setTimeout(() => socket.resetAndDestroy(), 50);
        else setTimeout(() => socket.write('ZZ\r\nnot a chunk\r\n'), 50);
      }
    });
    socket.on('error', () => undefined);
  });
}

describe('an upstream that breaks the HTTP/1.1 framing', () => {
  const upstream = rawUpstream();
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.server.keep_alive_interval_ms = 60_000;
        file.providers.push({ id: 'raw', name: 'Raw', kind: 'openai', base_url: url, timeouts: {} });
        file.models.push(
          {
            id: 'test/garbage-then-good',
            name: 'garbage-then-good',
            context_length: 8192,
            endpoints: [
              { provider: 'raw', model: 'garbage-status', pricing: PRICING },
              { provider: 'mock-b', model: 'mock-chat', pricing: PRICING },
            ],
          },
          {
            id: 'test/reset-chunk',
            name: 'reset-chunk',
            context_length: 8192,
            endpoints: [{ provider: 'raw', model: 'reset-chunk', pricing: PRICING }],
          },
          {
            id: 'test/bad-chunk',
            name: 'bad-chunk',
            context_length: 8192,
            endpoints: [{ provider: 'raw', model: 'bad-chunk', pricing: PRICING }],
          },
        );
      },
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    upstream.close();
  });

  it('a response with an invalid status line fails over to the next endpoint (non-streamed)', async () => {
    const r = await chat(gw, key, { model: 'test/garbage-then-good', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock B');
  });

  it('a response with an invalid status line fails over to the next endpoint (streamed)', async () => {
    const r = await chatStream(gw, key, {
      model: 'test/garbage-then-good',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status, r.raw).toBe(200);
    expect(r.done).toBe(true);
  });

  it('a bad chunk size mid-stream is a lost provider connection, not our internal error', async () => {
    const r = await chatStream(gw, key, { model: 'test/bad-chunk', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(200);
    const last = r.events.at(-1);
    expect(last.choices[0].finish_reason).toBe('error');
    // What a reset at the same point gives (see the test below): provider_unavailable, "connection was lost".
    expect(last.error).toMatchObject({
      message: 'The provider connection was lost mid-stream',
      metadata: { error_type: 'provider_unavailable' },
    });
  });

  it('a reset at the same point is a lost provider connection', async () => {
    const r = await chatStream(gw, key, { model: 'test/reset-chunk', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(200);
    expect(r.events.at(-1).error).toMatchObject({
      message: 'The provider connection was lost mid-stream',
      metadata: { error_type: 'provider_unavailable' },
    });
  });
});
