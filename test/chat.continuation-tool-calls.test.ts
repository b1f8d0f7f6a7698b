/**
 * Mid-stream continuation carries on one choice's text only, and never a JSON-constrained answer. An upstream that dies after tool-call
 * deltas (or a second choice) reached the caller used to be continued all the same: the prefill held
 * the text alone, the continuation numbered its own tool call from 0 again, and the caller assembled
 * one call of two ids, a doubled name and arguments that are not JSON — ended as a success
 * (`finish_reason: "tool_calls"`, usage, `[DONE]`). Now such a break ends in the in-band error, and
 * the continuing endpoint is never asked (an outside checker's finding).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

interface Upstream {
  url: string;
  requests: number;
  server: Server;
}

const chunk = (choices: unknown[]) =>
  `data: ${JSON.stringify({ id: 'u1', object: 'chat.completion.chunk', created: 1, model: 'm', choices })}\n\n`;

/** Streams what its model name says, then (for `cut-*`) destroys the connection mid-answer. */
async function startUpstream(): Promise<Upstream> {
  const upstream: Upstream = { url: '', requests: 0, server: createServer() };
  upstream.server.on('request', (req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      upstream.requests++;
      const { model } = JSON.parse(text) as { model: string };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        chunk([{ index: 0, delta: { role: 'assistant', content: 'Let me check the weather.' }, finish_reason: null }]),
      );
      if (model === 'cut-in-tool') {
        res.write(
          chunk([
            {
              index: 0,
              delta: {
                tool_calls: [
                  { index: 0, id: 'call_FIRST', type: 'function', function: { name: 'get_weather', arguments: '' } },
                ],
              },
              finish_reason: null,
            },
          ]),
        );
        res.write(
          chunk([
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, function: { arguments: '{"location": "Pa' } }] },
              finish_reason: null,
            },
          ]),
        );
      } else if (model === 'cut-second-choice') {
        res.write(chunk([{ index: 1, delta: { role: 'assistant', content: 'Another answer' }, finish_reason: null }]));
      }
      setTimeout(() => res.socket?.destroy(), 20);
    });
  });
  await new Promise<void>((resolve) => upstream.server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1`;
  return upstream;
}

/** A prefill endpoint that would answer with a complete tool call of its own (index 0). */
async function startContinuer(): Promise<Upstream> {
  const continuer: Upstream = { url: '', requests: 0, server: createServer() };
  continuer.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      continuer.requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        chunk([
          {
            index: 0,
            delta: {
              tool_calls: [
                {
                  index: 0,
                  id: 'call_SECOND',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '{"location": "Paris"}' },
                },
              ],
            },
            finish_reason: null,
          },
        ]),
      );
      res.write(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]));
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => continuer.server.listen(0, '127.0.0.1', resolve));
  continuer.url = `http://127.0.0.1:${(continuer.server.address() as AddressInfo).port}/v1`;
  return continuer;
}

describe('mid-stream continuation after tool calls or a second choice', () => {
  let upstream: Upstream;
  let continuer: Upstream;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    continuer = await startContinuer();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push(
          { id: 'cutter', name: 'Cutter', kind: 'openai', base_url: upstream.url, timeouts: {} },
          { id: 'continuer', name: 'Continuer', kind: 'openai', base_url: continuer.url, timeouts: {} },
        );
        const pricing = { prompt: '0.000001', completion: '0.000002' };
        for (const upstreamModel of ['cut-in-tool', 'cut-second-choice', 'cut-text'])
          file.models.push({
            id: `test/${upstreamModel}`,
            name: upstreamModel,
            context_length: 8192,
            endpoints: [
              { provider: 'cutter', model: upstreamModel, pricing, supports_prefill: true },
              {
                provider: 'continuer',
                model: 'c',
                pricing: { prompt: '0.000003', completion: '0.000004' },
                supports_prefill: true,
              },
            ],
          });
        (file as { routing: Record<string, unknown> }).routing.mid_stream_continuation = true;
      },
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((resolve) => upstream.server.close(resolve));
    await new Promise((resolve) => continuer.server.close(resolve));
  });

  const tools = [
    {
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
    },
  ];

  for (const [model, what] of [
    ['test/cut-in-tool', 'a tool call'],
    ['test/cut-second-choice', 'a second choice'],
  ] as const)
    it(`a break after ${what} ends in the in-band error; nothing is continued`, async () => {
      const before = continuer.requests;
      const sse = await chatStream(gw, key, {
        model,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools,
        provider: { order: ['cutter', 'continuer'] },
      });
      expect(sse.status).toBe(200);
      const finishes = sse.events
        .flatMap((e) => (e.choices ?? []).map((c: { finish_reason: string | null }) => c.finish_reason))
        .filter((f: string | null) => f !== null);
      expect(finishes).toEqual(['error']);
      expect(sse.events.some((e) => e.error)).toBe(true);
      expect(continuer.requests).toBe(before);
      // No second id was ever appended to the call the caller holds.
      const ids = sse.events.flatMap((e) =>
        (e.choices ?? []).flatMap((c: { delta: { tool_calls?: { id?: string }[] } }) =>
          (c.delta.tool_calls ?? []).map((t) => t.id).filter(Boolean),
        ),
      );
      expect(ids.length).toBeLessThanOrEqual(1);
    });

  for (const response_format of [
    { type: 'json_object' },
    { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } },
  ])
    it(`a break in a ${response_format.type} answer ends in the in-band error; nothing is continued`, async () => {
      // A constrained decoder would start a whole new JSON value after the prefill's partial one.
      const before = continuer.requests;
      const sse = await chatStream(gw, key, {
        model: 'test/cut-text',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        response_format,
        provider: { order: ['cutter', 'continuer'] },
      });
      expect(sse.status).toBe(200);
      expect(sse.events.some((e) => e.error)).toBe(true);
      expect(continuer.requests).toBe(before);
    });

  it('a break after text alone is still continued (the control)', async () => {
    const before = continuer.requests;
    const sse = await chatStream(gw, key, {
      model: 'test/cut-text',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      provider: { order: ['cutter', 'continuer'] },
    });
    expect(sse.status).toBe(200);
    expect(continuer.requests).toBe(before + 1);
    expect(sse.events.some((e) => e.error)).toBe(false);
  });
});
