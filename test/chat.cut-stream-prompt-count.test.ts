/**
 * A stream cut before its final usage (the upstream broke mid-answer) is charged the prompt count
 * the provider already gave — Anthropic's `message_start`, Gemini's `usageMetadata` on every event —
 * and our estimate of the text produced, never our own prompt estimate beside an exact count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, getJson, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const TIMEOUTS = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 2000, response_ms: 5000 };
const MESSAGES = [{ role: 'user', content: 'hi' }];

describe('a stream cut before its usage', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    upstream.scripts.set('claude-cut', () => [
      A.start({ input_tokens: 1200, cache_read_input_tokens: 34, output_tokens: 1 }),
      A.textStart(0),
      A.text(0, 'Hello there, this answer breaks'),
      { wait: 50 },
      { reset: true },
    ]);
    upstream.scripts.set('gemini-cut', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hello there, this answer' }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 777, candidatesTokenCount: 5, totalTokenCount: 782 },
        responseId: 'resp-cut',
      }),
      { wait: 50 },
      { reset: true },
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [
        { id: 'anth', kind: 'anthropic' },
        { id: 'gem', kind: 'gemini' },
      ],
      models: [
        { id: 'native/claude-cut', endpoints: [{ provider: 'anth', model: 'claude-cut' }] },
        { id: 'native/gemini-cut', endpoints: [{ provider: 'gem', model: 'gemini-cut' }] },
      ],
      timeouts: TIMEOUTS,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it.each([
    ['native/claude-cut', 1234, 'Hello there, this answer breaks'],
    ['native/gemini-cut', 777, 'Hello there, this answer'],
  ])(
    "%s: charged the provider's prompt count (%i) and an estimate of the text produced",
    async (model, prompt, text) => {
      const r = await chatStream(gw, key, { model, messages: MESSAGES });
      expect(r.status).toBe(200);
      expect(r.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe(text);
      expect(r.events.at(-1).error.metadata.error_type).toBe('provider_unavailable');
      const id = String(r.headers['x-generation-id']);
      const g = await getJson(gw, `/generation?id=${id}`, key);
      expect(g.status, JSON.stringify(g.json)).toBe(200);
      expect(g.json.data.tokens_prompt).toBe(prompt);
      expect(g.json.data.usage_estimated).toBe(true);
      // The output is estimated from the text (not Anthropic's early output_tokens: 1, nor Gemini's running count).
      expect(g.json.data.tokens_completion).toBeGreaterThanOrEqual(5);
      expect(g.json.data.tokens_completion).toBeLessThan(12);
      // 1000 units per prompt token, 2000 per completion token.
      expect(Math.round(Number(g.json.data.total_cost) * 1e9)).toBe(
        prompt * 1000 + g.json.data.tokens_completion * 2000,
      );
    },
  );
});
