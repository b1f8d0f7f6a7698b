/**
 * A whole (JSON) answer that does not say how it ended is a cut answer, never a success: an upstream
 * that answered `{"choices":[{"message":{…},"finish_reason":null}]}` — to a plain request, or to a
 * stream request it answered whole — was served with `finish_reason: "stop"` (the stream) or `null`
 * (plain), charged as a whole answer. Now it is the provider's invalid response: failed over when
 * another endpoint is there, else 502, nothing charged — as a stream that ends before its finish.
 * A provider the operator declared `whole_answer_without_finish_reason: stop` has it served as
 * finished instead (a server known to leave the field out of whole answers).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

let upstream: Server;
let gw: TestGateway;
let key: string;
let accountId: string;

/** Answers every request whole, as JSON; the upstream model's name says whether the choice finished. */
function startWholeAnswerUpstream(): Promise<string> {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const model = (JSON.parse(raw) as { model: string }).model;
      const finish = model === 'finished' ? 'stop' : null;
      const content = model === 'empty-unfinished' ? null : 'Partial answ';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-whole',
          object: 'chat.completion',
          created: 1700000000,
          model,
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
          usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    upstream.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`)),
  );
}

const PRICING = { prompt: '0.000001', completion: '0.000002' };

beforeAll(async () => {
  const url = await startWholeAnswerUpstream();
  gw = await startTestGateway({
    target: sqliteTarget,
    configure: (file) => {
      // The same upstream asked to stream (it answers whole anyway) and asked plainly.
      file.providers.push(
        { id: 'whole', name: 'Whole', kind: 'openai', base_url: url, api_key: 'k', timeouts: {} },
        {
          id: 'whole-plain',
          name: 'Whole plain',
          kind: 'openai',
          base_url: url,
          api_key: 'k',
          timeouts: {},
          stream_upstream: false,
        },
        {
          id: 'whole-lenient',
          name: 'Whole lenient',
          kind: 'openai',
          base_url: url,
          api_key: 'k',
          timeouts: {},
          whole_answer_without_finish_reason: 'stop',
        },
      );
      const single = (id: string, provider: string, model: string) => ({
        id,
        name: id,
        context_length: 8192,
        endpoints: [{ provider, model, pricing: PRICING, max_completion_tokens: 1024 }],
      });
      (file.models as unknown[]).push(
        single('whole/unfinished', 'whole', 'unfinished'),
        single('whole/empty-unfinished', 'whole', 'empty-unfinished'),
        single('whole/plain-unfinished', 'whole-plain', 'unfinished'),
        single('whole/finished', 'whole', 'finished'),
        single('whole/plain-finished', 'whole-plain', 'finished'),
        single('whole/lenient', 'whole-lenient', 'unfinished'),
        {
          id: 'whole/failover',
          name: 'failover',
          context_length: 8192,
          endpoints: [
            { provider: 'whole-plain', model: 'unfinished', pricing: PRICING, max_completion_tokens: 1024 },
            { provider: 'mock', model: 'mock-chat', pricing: PRICING, max_completion_tokens: 1024 },
          ],
        },
      );
    },
  });
  accountId = await gw.createAccount(5);
  key = (await gw.createKey(accountId)).key;
});

afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

const ask = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('a whole answer without a finish reason', () => {
  for (const model of ['whole/unfinished', 'whole/empty-unfinished', 'whole/plain-unfinished']) {
    it(`${model}: 502 streamed or not, nothing charged`, async () => {
      const before = await balanceUnits(gw, accountId);
      const plain = await chat(gw, key, ask(model));
      expect(plain.status, plain.text).toBe(502);
      expect(plain.json.error.message).toMatch(/finish_reason/);
      const streamed = await chatStream(gw, key, ask(model));
      expect(streamed.status, streamed.raw).toBe(502);
      expect(streamed.raw).not.toContain('Partial answ');
      expect(await balanceUnits(gw, accountId)).toBe(before);
    });
  }

  it('fails over to the next endpoint before anything was sent', async () => {
    const r = await chat(gw, key, ask('whole/failover'));
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock');
    expect(r.json.choices[0].message.content).not.toBe('Partial answ');
  });

  it('a provider declared `whole_answer_without_finish_reason: stop` has it served as finished, and charged', async () => {
    const before = await balanceUnits(gw, accountId);
    const plain = await chat(gw, key, ask('whole/lenient'));
    expect(plain.status, plain.text).toBe(200);
    expect(plain.json.choices[0]).toMatchObject({ message: { content: 'Partial answ' }, finish_reason: 'stop' });
    const streamed = await chatStream(gw, key, ask('whole/lenient'));
    expect(streamed.events.some((e) => e.choices?.[0]?.finish_reason === 'stop')).toBe(true);
    expect(before - (await balanceUnits(gw, accountId))).toBe(2 * (10 * 1000 + 3 * 2000));
  });

  it('an answer that says it finished is served as before', async () => {
    for (const model of ['whole/finished', 'whole/plain-finished']) {
      const plain = await chat(gw, key, ask(model));
      expect(plain.status, plain.text).toBe(200);
      expect(plain.json.choices[0]).toMatchObject({ message: { content: 'Partial answ' }, finish_reason: 'stop' });
      const streamed = await chatStream(gw, key, ask(model));
      expect(streamed.events.some((e) => e.choices?.[0]?.finish_reason === 'stop')).toBe(true);
      expect(streamed.events.find((e) => e.usage)).toBeDefined();
    }
  });
});
