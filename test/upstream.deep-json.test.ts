/**
 * Upstream JSON nested deeper than any answer (~6,000 levels, ~36 KB: far below every size cap).
 * JSON.parse takes it, but every recursive walk after it — an adapter re-serialising tool
 * arguments, the relay writing the chunk — would overflow the stack: our 500, no failover, and an
 * "Internal server error" chunk mid-stream. Such an event or body is the provider's malformed
 * answer instead: failed over before the first token, an in-band error after it (a malformed event
 * is never skipped: it may have carried part of the answer).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const MESSAGES = [{ role: 'user', content: 'Call the tool.' }];
const DEPTH = 6000; // ~36 KB of JSON: far below any size cap
const DEEP = '{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH);

describe('deeply nested tool arguments from Anthropic and Gemini', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // The healthy fallback endpoint: a plain Anthropic text stream.
    upstream.scripts.set('claude-ok', () => [
      A.start(),
      A.textStart(0),
      A.text(0, 'Fallback answer.'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 3 }),
      A.messageStop(),
    ]);
    // Gemini streams function calls whole: the args object arrives parsed in one event.
    upstream.scripts.set('gemini-deep', () => [
      `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":${DEEP}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":5},"responseId":"r1"}\r\n\r\n`,
    ]);
    // A whole (non-streamed) Anthropic message with a tool_use input.
    upstream.scripts.set('claude-deep', () => [
      { status: 200 },
      `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":${DEEP}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":5}}`,
    ]);
    // Each model's first endpoint sends the deep JSON; its second is the healthy fallback.
    const withFallback = (id: string, provider: string, model: string) => ({
      id,
      endpoints: [
        { provider, model },
        { provider: 'anth', model: 'claude-ok' },
      ],
    });
    gw = await startNativeGateway(upstream, {
      providers: [
        { id: 'gem', kind: 'gemini' },
        { id: 'anth-plain', kind: 'anthropic', stream_upstream: false },
        { id: 'anth', kind: 'anthropic' },
      ],
      models: [
        withFallback('native/gemini-deep', 'gem', 'gemini-deep'),
        withFallback('native/claude-deep', 'anth-plain', 'claude-deep'),
      ],
      timeouts: FAST,
      configure: (file) => {
        file.routing.max_attempts = 4;
      },
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('a Gemini functionCall with deeply nested args is failed over, streamed and not', async () => {
    const streamed = await chatStream(gw, key, { model: 'native/gemini-deep', messages: MESSAGES });
    expect(streamed.status, streamed.raw.slice(0, 300)).toBe(200);
    const text = streamed.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
    expect(text, streamed.raw.slice(0, 300)).toBe('Fallback answer.');

    const whole = await chat(gw, key, { model: 'native/gemini-deep', messages: MESSAGES });
    expect(whole.status, whole.text.slice(0, 300)).toBe(200);
    expect(whole.json.choices[0].message.content).toBe('Fallback answer.');
  });

  it('an Anthropic tool_use with a deeply nested input is failed over', async () => {
    const whole = await chat(gw, key, { model: 'native/claude-deep', messages: MESSAGES });
    expect(whole.status, whole.text.slice(0, 300)).toBe(200);
    expect(whole.json.choices[0].message.content).toBe('Fallback answer.');
    expect(upstream.requests.some((r) => r.model === 'claude-deep')).toBe(true);
  });
});

describe('deeply nested JSON in an OpenAI-compatible stream after the first token', () => {
  let up: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    up = await startScriptedUpstream();
    const deepChunk = `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lost","extra":${DEEP}},"finish_reason":null}]}\n\n`;
    up.scripts.set('deep', () => [
      { write: chunk({ role: 'assistant', content: '' }) },
      { write: chunk({ content: 'one ' }) },
      { write: deepChunk },
      { write: chunk({ content: 'two' }) },
      { write: chunk({}, 'stop') + usageChunk() + DONE },
    ]);
    // A non-JSON event that is the upstream's own internals: its text reaches neither caller nor log.
    up.scripts.set('leaky', () => [{ write: 'data: FATAL postgres://admin:SuperSecretPw@db.internal:5432/prod\n\n' }]);
    // Valid JSON, but a piece of the answer of the wrong type: malformed too, never relayed or dropped.
    up.scripts.set('wrongtype', () => [
      { write: chunk({ role: 'assistant', content: 'The answer is' }) },
      { write: chunk({ content: 42 }) },
      { write: chunk({ content: ' 42.' }) },
      { write: chunk({}, 'stop') + usageChunk() + DONE },
    ]);
    gw = await startGatewayWith(up, ['deep', 'leaky', 'wrongtype']);
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  it('ends the answer at the event as malformed, streamed (in-band error) and not (502)', async () => {
    const streamed = await chatStream(gw, key, { model: 'scripted/deep', messages: MESSAGES });
    const errors = streamed.events.filter((e) => e.error !== undefined);
    expect(errors).toHaveLength(1);
    expect(errors[0].error.metadata.error_type).toBe('invalid_response');
    expect(streamed.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('one ');
    expect(streamed.done).toBe(true);
    const whole = await chat(gw, key, { model: 'scripted/deep', messages: MESSAGES });
    expect(whole.status, whole.text.slice(0, 300)).toBe(502);
    expect(whole.json.error.message).toMatch(/nested too deeply/);
  });

  it('a non-JSON event is described by its length, never quoted (it may be a stack or a connection string)', async () => {
    const whole = await chat(gw, key, { model: 'scripted/leaky', messages: MESSAGES });
    expect(whole.status).toBe(502);
    expect(whole.json.error.message).toMatch(/stream event is not JSON \(\d+ characters\)/);
    const streamed = await chatStream(gw, key, { model: 'scripted/leaky', messages: MESSAGES });
    for (const text of [whole.text, streamed.raw]) expect(text).not.toMatch(/postgres|SuperSecret|FATAL/);
  });

  it('a delta whose content is not a string breaks the stream: neither relayed as sent nor dropped', async () => {
    const streamed = await chatStream(gw, key, { model: 'scripted/wrongtype', messages: MESSAGES });
    const errors = streamed.events.filter((e) => e.error !== undefined);
    expect(errors).toHaveLength(1);
    expect(errors[0].error.metadata.error_type).toBe('invalid_response');
    expect(streamed.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('The answer is');
    expect(streamed.raw).not.toContain('"content":42');
    const whole = await chat(gw, key, { model: 'scripted/wrongtype', messages: MESSAGES });
    expect(whole.status, whole.text.slice(0, 300)).toBe(502);
    expect(whole.json.error.message).toMatch(/delta\.content is not a string/);
  });
});
