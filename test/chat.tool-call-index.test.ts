/**
 * Tool calls streamed without an `index` (Google's OpenAI-compatible endpoint sends whole calls that
 * way) reach the caller numbered, as the non-streamed fold numbers them: relayed as they came,
 * @openrouter/sdk refused the chunk, and openai's stream helper and the AI SDK lost the calls. Servers
 * that stream a call's fragments without an index (Ollama, mistral.rs) get them joined: a fragment that
 * names no call continues the one before it. A call's first fragment carries an id and a type (the
 * openai stream helper throws without them), and calls are numbered from 0 whatever the server's start.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('no-index', () => [
    { write: chunk({ role: 'assistant', content: null, tool_calls: [call('call_a', 'weather', '{"city":"Oslo"}')] }) },
    { write: chunk({ tool_calls: [call('call_b', 'time', '{"zone":"CET"}')] }) },
    { write: chunk({}, 'tool_calls') + usageChunk() + DONE },
  ]);
  up.scripts.set('fragments', () => [
    {
      write: chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x":' } }],
      }),
    },
    { write: chunk({ tool_calls: [{ function: { arguments: '1}' } }] }) },
    { write: chunk({ tool_calls: [{ id: 'call_b', type: 'function', function: { name: 'g', arguments: '' } }] }) },
    { write: chunk({ tool_calls: [{ id: 'call_a', function: { arguments: '' } }] }) },
    { write: chunk({ tool_calls: [{ id: 'call_b', function: { arguments: '{}' } }] }) },
    { write: chunk({}, 'tool_calls') + usageChunk() + DONE },
  ]);
  // A later call without id or type (no index at all), and a server numbering its calls from 1.
  up.scripts.set('bare-second', () => [
    { write: chunk({ role: 'assistant', content: null, tool_calls: [call('call_a', 'f', '{"x":1}')] }) },
    { write: chunk({ tool_calls: [{ function: { name: 'g', arguments: '{}' } }] }) },
    { write: chunk({}, 'tool_calls') + usageChunk() + DONE },
  ]);
  up.scripts.set('from-one', () => [
    {
      write: chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 1, id: 'call_a', function: { name: 'f', arguments: '{"x":' } }],
      }),
    },
    { write: chunk({ tool_calls: [{ index: 1, function: { arguments: '1}' } }] }) },
    { write: chunk({}, 'tool_calls') + usageChunk() + DONE },
  ]);
  gw = await startGatewayWith(up, ['no-index', 'fragments', 'bare-second', 'from-one']);
  key = (await gw.createKey(await gw.createAccount(5))).key;
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe('tool calls without an index', () => {
  it('streamed: each call reaches the caller with its own index', async () => {
    const r = await chatStream(gw, key, { model: 'scripted/no-index', messages: [{ role: 'user', content: 'hi' }] });
    const calls = r.events.flatMap((e) => e.choices?.[0]?.delta?.tool_calls ?? []);
    expect(calls.map((c: { index: number; id: string }) => [c.index, c.id])).toEqual([
      [0, 'call_a'],
      [1, 'call_b'],
    ]);
    expect(gw.contractViolations).toEqual([]);
  });

  it('non-streamed: the same two calls', async () => {
    const r = await chat(gw, key, { model: 'scripted/no-index', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.tool_calls.map((c: { id: string }) => c.id)).toEqual(['call_a', 'call_b']);
  });

  it('fragments without an index: each continues the call before it, streamed and not', async () => {
    const body = { model: 'scripted/fragments', messages: [{ role: 'user', content: 'hi' }] };
    const streamed = await chatStream(gw, key, body);
    const fragments = streamed.events.flatMap((e) => e.choices?.[0]?.delta?.tool_calls ?? []);
    expect(fragments.map((c: { index: number }) => c.index)).toEqual([0, 0, 1, 0, 1]);
    expect(gw.contractViolations).toEqual([]);
    const whole = await chat(gw, key, body);
    expect(whole.status, whole.text).toBe(200);
    expect(
      whole.json.choices[0].message.tool_calls.map(
        (c: { id: string; function: { name: string; arguments: string } }) => [
          c.id,
          c.function.name,
          c.function.arguments,
        ],
      ),
    ).toEqual([
      ['call_a', 'f', '{"x":1}'],
      ['call_b', 'g', '{}'],
    ]);
  });

  it("a call's first fragment carries an id and a type, and calls are numbered from 0, as the openai stream helper needs", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    for (const [model, expected] of [
      [
        'scripted/bare-second',
        [
          ['call_a', 'f', '{"x":1}'],
          ['call_1', 'g', '{}'],
        ],
      ],
      ['scripted/from-one', [['call_a', 'f', '{"x":1}']]],
    ] as const) {
      const stream = client.chat.completions.stream({ model, messages: [{ role: 'user', content: 'hi' }] });
      const done = await stream.finalChatCompletion();
      const calls = done.choices[0]!.message.tool_calls ?? [];
      expect(calls.map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : []))).toEqual(
        expected,
      );
      const whole = await chat(gw, key, { model, messages: [{ role: 'user', content: 'hi' }] });
      expect(
        whole.json.choices[0].message.tool_calls.map((c: { id: string; function: { name: string } }) => [
          c.id,
          c.function.name,
        ]),
      ).toEqual(expected.map(([id, name]) => [id, name]));
    }
    expect(gw.contractViolations).toEqual([]);
  });
});
