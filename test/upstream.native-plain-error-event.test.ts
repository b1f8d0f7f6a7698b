/**
 * An SSE `event: error` whose data is a plain-text reason (as proxies and SSE servers in front of a
 * provider send it; Anthropic itself names its error events `error`) from an Anthropic or Gemini
 * endpoint ends the stream as the provider's error at once — as the OpenAI decoder does — rather than
 * counting as a malformed event until the idle timer reports a stall. The reason is the provider's
 * own text about its side, so the caller reads "server error", never the text itself (a failing
 * server's text may carry its stack or addresses).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const MESSAGES = [{ role: 'user', content: 'Tell a story.' }];
const PLAIN_ERROR = 'event: error\ndata: Overloaded: upstream capacity exhausted\n\n';

describe('`event: error` with a plain-text reason from an Anthropic or Gemini endpoint', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // Content, then the error event, and the connection stays open.
    upstream.scripts.set('claude-plain-error', () => [
      A.start(),
      A.textStart(0),
      A.text(0, 'Once upon'),
      PLAIN_ERROR,
      { hang: true },
    ]);
    upstream.scripts.set('gemini-plain-error', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'Once upon' }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 5 },
        responseId: 'resp-1',
      }),
      PLAIN_ERROR,
      { hang: true },
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [
        { id: 'anth', kind: 'anthropic' },
        { id: 'gem', kind: 'gemini' },
      ],
      models: [
        { id: 'native/claude-plain-error', endpoints: [{ provider: 'anth', model: 'claude-plain-error' }] },
        { id: 'native/gemini-plain-error', endpoints: [{ provider: 'gem', model: 'gemini-plain-error' }] },
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
    ['Anthropic', 'native/claude-plain-error'],
    ['Gemini', 'native/gemini-plain-error'],
  ])("%s: ends the stream with the provider's error, not as a stall", async (_name, model) => {
    const r = await chatStream(gw, key, { model, messages: MESSAGES });
    expect(r.status).toBe(200);
    const failure = r.events.find((e) => e.error !== undefined);
    expect(failure, r.raw).toBeDefined();
    expect(failure.error.metadata.error_type).not.toBe('timeout');
    expect(failure.error.message).toBe('Provider returned error: server error');
    expect(r.raw).not.toContain('upstream capacity exhausted');
  });
});
