/**
 * An upstream's `__proto__` keys are not relayed (outside check: they reached `choices[].message`
 * and stream deltas, while the same key from a caller is refused). JSON.parse makes them own
 * properties; a client merging the answer with `Object.assign` would take one as a prototype.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICES = { prompt: '0.000001', completion: '0.000002' };
const MESSAGES = [{ role: 'user', content: 'hi' }];

/** A message or delta with `__proto__` written out, and one escaped as `\u005f_proto__`. */
const POLLUTED = '"__proto__":{"isAdmin":true},"\\u005f_proto__":{"polluted":1}';

function startPollutingUpstream(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { model: string; stream?: boolean };
      const head = `"id":"chatcmpl-p","object":"chat.completion","created":1,"model":"${body.model}"`;
      const usage = '"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}';
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          `{${head},"choices":[{"index":0,"message":{"role":"assistant","content":"ok",${POLLUTED}},"finish_reason":"stop"}],${usage}}`,
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = `{${head.replace('chat.completion"', 'chat.completion.chunk"')}`;
      res.write(`data: ${chunk},"choices":[{"index":0,"delta":{"role":"assistant","content":"ok",${POLLUTED}}}]}\n\n`);
      res.write(`data: ${chunk},"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n`);
      res.write(`data: ${chunk},"choices":[],${usage}}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server }),
    ),
  );
}

describe('__proto__ keys from an upstream', () => {
  let upstream: { url: string; server: Server };
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startPollutingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push(
          {
            id: 'pp',
            name: 'Plain',
            kind: 'openai',
            base_url: upstream.url,
            api_key: '',
            timeouts: {},
            stream_upstream: false,
          },
          { id: 'ps', name: 'Streamed', kind: 'openai', base_url: upstream.url, api_key: '', timeouts: {} },
        );
        for (const provider of ['pp', 'ps'])
          file.models.push({
            id: `test/proto-${provider}`,
            name: provider,
            context_length: 8192,
            endpoints: [{ provider, model: 'm', pricing: PRICES }],
          });
      },
    });
    key = (await gw.createKey(await gw.createAccount(1))).key;
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.closeAllConnections();
    await new Promise((resolve) => upstream.server.close(resolve));
  });

  it.each(['test/proto-pp', 'test/proto-ps'])(
    '%s: neither the JSON answer nor the stream carries one',
    async (model) => {
      const whole = await chat(gw, key, { model, messages: MESSAGES });
      expect(whole.status, whole.text).toBe(200);
      expect(whole.json.choices[0].message.content).toBe('ok');
      expect(whole.text).not.toMatch(/__proto__|\\u005f/);

      const streamed = await chatStream(gw, key, { model, messages: MESSAGES });
      expect(streamed.status).toBe(200);
      expect(streamed.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('ok');
      expect(streamed.raw).not.toMatch(/__proto__|\\u005f/);
    },
  );
});
