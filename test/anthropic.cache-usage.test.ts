/**
 * Anthropic prompt-cache writes reach the caller's usage as OpenRouter reports them:
 * `prompt_tokens_details: { cached_tokens, cache_write_tokens }` (@openrouter/ai-sdk-provider reads
 * `cache_write_tokens` into its cache-write count). Anthropic reports them as
 * `cache_creation_input_tokens`. Regression: the writes were counted in the prompt and not shown.
 */
import { promptCeilingOf } from '../src/billing/token-estimate.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const START_USAGE = {
  input_tokens: 10,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 50,
  output_tokens: 1,
};

describe('Anthropic cache usage', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // Counts past any real prompt: the prompt is charged at most 4 × the context window (400,000 here).
    upstream.scripts.set('claude-absurd', () => [
      A.start({ input_tokens: 10, cache_creation_input_tokens: 1e9, cache_read_input_tokens: 1e9, output_tokens: 1 }),
      A.textStart(0),
      A.text(0, 'Hi'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 3 }),
      A.messageStop(),
    ]);
    upstream.scripts.set('claude-cache', () => [
      A.start(START_USAGE),
      A.textStart(0),
      A.text(0, 'Hi'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 3 }),
      A.messageStop(),
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'anth', kind: 'anthropic' }],
      models: [
        { id: 'native/claude-cache', endpoints: [{ provider: 'anth', model: 'claude-cache' }] },
        { id: 'native/claude-absurd', endpoints: [{ provider: 'anth', model: 'claude-absurd' }] },
      ],
      timeouts: FAST,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('non-streamed: cache reads and writes both appear in prompt_tokens_details', async () => {
    const r = await chat(gw, key, { model: 'native/claude-cache', messages: [{ role: 'user', content: 'Hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.prompt_tokens).toBe(160);
    expect(r.json.usage.prompt_tokens_details.cached_tokens).toBe(50);
    expect(r.json.usage.prompt_tokens_details, JSON.stringify(r.json.usage)).toMatchObject({ cache_write_tokens: 100 });
  });

  it('streamed: the usage chunk carries cache_write_tokens', async () => {
    const r = await chatStream(gw, key, { model: 'native/claude-cache', messages: [{ role: 'user', content: 'Hi' }] });
    const usage = r.events.find((e) => e.usage)?.usage;
    expect(usage.prompt_tokens_details.cached_tokens).toBe(50);
    expect(usage.prompt_tokens_details, JSON.stringify(usage)).toMatchObject({ cache_write_tokens: 100 });
  });

  it('cache counts are parts of the prompt charged: never more than it, together (outside check: 1e9 relayed)', async () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    const r = await chat(gw, key, { model: 'native/claude-absurd', messages });
    expect(r.status, r.text).toBe(200);
    const { prompt_tokens: prompt, prompt_tokens_details: details } = r.json.usage;
    // The absurd count is charged at the request's ceiling (its bytes + 8,192), below four times the context.
    expect(prompt).toBe(promptCeilingOf(messages, { model: 'native/claude-absurd' }));
    expect(details.cached_tokens + details.cache_write_tokens).toBeLessThanOrEqual(prompt);
  });
});
