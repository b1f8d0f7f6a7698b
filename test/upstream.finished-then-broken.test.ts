/**
 * An Anthropic or Gemini answer that is complete — every choice has its finish reason and the
 * provider's final usage arrived — followed by trouble on the wire: the connection is reset (Gemini
 * has no end marker: its last event is the one with finishReason, the end of the body is all that
 * follows), or Anthropic sends an `error` event between `message_delta` and `message_stop`. The
 * answer stands: served once and charged its usage, on the non-streamed path (which reads the same
 * upstream stream by default) as on the streamed one, where no error chunk follows `stop` and the
 * generation is recorded finished. Neither path asks the provider for a second generation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, toUnits, waitForGeneration, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const MESSAGES = [{ role: 'user', content: 'Say done.' }];

describe('a finished Anthropic or Gemini answer followed by a broken wire', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // Gemini: the final event (finishReason + complete usage), then the connection is reset.
    upstream.scripts.set('gemini-finished-reset', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'Done.' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 2, totalTokenCount: 9 },
        responseId: 'resp-1',
      }),
      { wait: 100 },
      { reset: true },
    ]);
    // Anthropic: message_delta (stop_reason + final usage), then the connection is reset before message_stop.
    upstream.scripts.set('claude-finished-reset', () => [
      A.start({ input_tokens: 7, output_tokens: 1 }),
      A.textStart(0),
      A.text(0, 'Done.'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 2 }),
      { wait: 100 },
      { reset: true },
    ]);
    // Anthropic: message_delta (stop_reason + final usage), then an overloaded error event.
    upstream.scripts.set('claude-finished-error', () => [
      A.start({ input_tokens: 7, output_tokens: 1 }),
      A.textStart(0),
      A.text(0, 'Done.'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 2 }),
      A.event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [
        { id: 'gem', kind: 'gemini' },
        { id: 'anth', kind: 'anthropic' },
      ],
      models: [
        { id: 'native/gemini-finished-reset', endpoints: [{ provider: 'gem', model: 'gemini-finished-reset' }] },
        { id: 'native/claude-finished-reset', endpoints: [{ provider: 'anth', model: 'claude-finished-reset' }] },
        { id: 'native/claude-finished-error', endpoints: [{ provider: 'anth', model: 'claude-finished-error' }] },
      ],
      timeouts: FAST,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it.each([
    ['Gemini', 'native/gemini-finished-reset', 'gemini-finished-reset'],
    ['Anthropic', 'native/claude-finished-reset', 'claude-finished-reset'],
  ])(
    'non-streamed: a complete %s answer whose connection is reset afterwards is served, once, and charged exactly',
    async (_name, model, upstreamModel) => {
      const before = upstream.requests.filter((r) => r.model === upstreamModel).length;
      const r = await chat(gw, key, { model, messages: MESSAGES });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      expect(r.json.choices[0]).toMatchObject({ message: { content: 'Done.' }, finish_reason: 'stop' });
      expect(r.json.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2 });
      expect(toUnits(r.json.usage.cost)).toBe(7 * 1000 + 2 * 2000); // the helper's prices: 1000 / 2000 units per token
      // The finished generation was not run again upstream.
      expect(upstream.requests.filter((x) => x.model === upstreamModel).length - before).toBe(1);
    },
  );

  it('streamed: an Anthropic error event after message_delta does not turn the finished answer into an error', async () => {
    const r = await chatStream(gw, key, { model: 'native/claude-finished-error', messages: MESSAGES });
    expect(r.status).toBe(200);
    expect(r.done).toBe(true);
    const finish = r.events.find((e) => e.choices?.[0]?.finish_reason === 'stop');
    expect(finish, r.raw).toBeDefined();
    // Nothing after the finish but our usage chunk: no error chunk after `stop`.
    expect(
      r.events.filter((e) => e.error !== undefined),
      r.raw,
    ).toEqual([]);
    const usage = r.events.at(-1).usage;
    expect(usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2 });
    const generation = await waitForGeneration(gw, r.events[0].id, key);
    expect(generation.json.data).toMatchObject({ finish_reason: 'stop', native_finish_reason: 'end_turn' });
  });
});
