/**
 * A short answer can come in one upstream event — text, finish and the whole usage (Gemini does
 * this) — which is also the first content event, read before the gateway commits to the endpoint:
 * that event ends the answer too, so a body left open after it does not keep the caller (streamed
 * or not) waiting until the idle timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

/** Long enough that waiting for it times the test out. */
const TIMEOUTS = { connect_ms: 2000, first_token_ms: 5000, idle_ms: 60_000, response_ms: 120_000 };
const MESSAGES = [{ role: 'user', content: 'hi' }];

describe('a one-event answer (text, finish and whole usage), then an open body', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    upstream.scripts.set('gemini-one-event', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hello world' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 2, totalTokenCount: 13 },
        responseId: 'resp-one',
      }),
      { hang: true },
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'gem', kind: 'gemini' }],
      models: [{ id: 'native/gemini-one-event', endpoints: [{ provider: 'gem', model: 'gemini-one-event' }] }],
      timeouts: TIMEOUTS,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('streamed: the usage chunk and [DONE] come at once', async () => {
    const r = await chatStream(gw, key, { model: 'native/gemini-one-event', messages: MESSAGES });
    expect(r.done).toBe(true);
    expect(r.events.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 2 });
  }, 10_000);

  it('non-streamed: the JSON answer comes at once', async () => {
    const r = await chat(gw, key, { model: 'native/gemini-one-event', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.content).toBe('Hello world');
    expect(r.json.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 2 });
  }, 10_000);
});
