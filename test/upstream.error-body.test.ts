/**
 * An upstream that sends an error status and its headers at once and then is slow with the error
 * body (here: longer than `connect_ms`). The status decides: a 400 ("the caller's fault, do not move
 * on") reaches the caller instead of failing over as a timeout and counting against the endpoint,
 * and a 429 keeps its Retry-After. (The body is read under a connect budget of its own; when it does
 * not come in time, the status and headers classify the failure.)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICING = { prompt: '0.000001', completion: '0.000002' };

describe('an error status whose body is slow to come', () => {
  let server: Server;
  let gw: TestGateway;
  let key: string;
  let secondCalled = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url!.startsWith('/second')) {
          secondCalled++;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 'c',
              object: 'chat.completion',
              created: 1,
              model: 'm',
              choices: [{ index: 0, message: { role: 'assistant', content: 'second' }, finish_reason: 'stop' }],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }),
          );
          return;
        }
        if (req.url!.startsWith('/limited')) {
          res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
          res.write('{"error":{"message":"rate limited",');
          setTimeout(() => res.end('"type":"rate_limit_error","code":"rate_limited"}}'), 3000);
          return;
        }
        // The status and headers at once; the error body (chunked) trickles in, ending after 3 s.
        res.writeHead(400, { 'content-type': 'application/json' });
        res.write('{"error":{"message":"bad parameter: temperature",');
        setTimeout(() => res.end('"type":"invalid_request_error","code":"bad_param"}}'), 3000);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.server.keep_alive_interval_ms = 60_000;
        // connect_ms 1 s (the harness default is 2 s): the headers come at once, the body after 3 s.
        file.providers.push(
          {
            id: 'slow-error',
            name: 'Slow error',
            kind: 'openai',
            base_url: `${url}/first`,
            timeouts: { connect_ms: 1000 },
          },
          { id: 'second', name: 'Second', kind: 'openai', base_url: `${url}/second`, timeouts: {} },
          {
            id: 'limited',
            name: 'Limited',
            kind: 'openai',
            base_url: `${url}/limited`,
            timeouts: { connect_ms: 1000 },
          },
        );
        file.models.push({
          id: 'test/slow-429',
          name: 'slow-429',
          context_length: 8192,
          endpoints: [{ provider: 'limited', model: 'a', pricing: PRICING }],
        });
        file.models.push({
          id: 'test/slow-400',
          name: 'slow-400',
          context_length: 8192,
          endpoints: [
            { provider: 'slow-error', model: 'a', pricing: PRICING },
            { provider: 'second', model: 'b', pricing: PRICING },
          ],
        });
      },
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gw.close();
  });

  it("a 400 is returned to the caller as the provider's rejection, not failed over as a timeout", async () => {
    const r = await chat(gw, key, { model: 'test/slow-400', messages: [{ role: 'user', content: 'hi' }] });
    expect({ status: r.status, secondCalled }, r.text).toEqual({ status: 400, secondCalled: 0 });
  }, 15_000);

  it('a 429 with Retry-After reaches the caller as a rate limit with its Retry-After, not as a timeout', async () => {
    const r = await chat(gw, key, { model: 'test/slow-429', messages: [{ role: 'user', content: 'hi' }] });
    expect({ status: r.status, retryAfter: r.headers['retry-after'] }, r.text).toEqual({
      status: 429,
      retryAfter: '30',
    });
  }, 15_000);
});
