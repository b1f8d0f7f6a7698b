/**
 * An upstream SSE body that opens with a UTF-8 byte-order mark (allowed by the SSE spec, sent by some
 * servers) is read whole: the mark is not part of the first line, so the first event is not lost —
 * whether the body comes in one write or the mark arrives alone.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

let upstream: Server;
let gw: TestGateway;
let key: string;

const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const BODY =
  event({ role: 'assistant', content: 'Hello' }) +
  event({ content: ' world' }) +
  event({}, 'stop') +
  `data: ${JSON.stringify({ id: 'u', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n` +
  'data: [DONE]\n\n';

function startBomUpstream(): Promise<string> {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const model = (JSON.parse(raw) as { model: string }).model;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (model === 'split') {
        res.write(Buffer.from([0xef, 0xbb]));
        setTimeout(() => {
          res.write(Buffer.from([0xbf]));
          res.end(BODY);
        }, 20);
      } else res.end('\ufeff' + BODY);
    });
  });
  return new Promise((resolve) =>
    upstream.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`)),
  );
}

const PRICING = { prompt: '0.000001', completion: '0.000002' };

beforeAll(async () => {
  const url = await startBomUpstream();
  gw = await startTestGateway({
    target: sqliteTarget,
    configure: (file) => {
      file.providers.push({ id: 'bom', name: 'Bom', kind: 'openai', base_url: url, api_key: 'k', timeouts: {} });
      const single = (id: string, model: string) => ({
        id,
        name: id,
        context_length: 8192,
        endpoints: [{ provider: 'bom', model, pricing: PRICING, max_completion_tokens: 1024 }],
      });
      (file.models as unknown[]).push(single('bom/whole', 'whole'), single('bom/split', 'split'));
    },
  });
  key = (await gw.createKey(await gw.createAccount(5))).key;
});

afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

const ask = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('an upstream SSE body opening with a byte-order mark', () => {
  for (const model of ['bom/whole', 'bom/split']) {
    it(`${model}: the first event is kept, streamed and not`, async () => {
      const plain = await chat(gw, key, ask(model));
      expect(plain.status, plain.text).toBe(200);
      expect(plain.json.choices[0].message.content).toBe('Hello world');
      const streamed = await chatStream(gw, key, ask(model));
      expect(streamed.status, streamed.raw).toBe(200);
      const text = streamed.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
      expect(text).toBe('Hello world');
    });
  }
});
