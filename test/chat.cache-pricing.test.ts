/**
 * Prompt-cache prices (docs/api.md, "Prices"): an endpoint priced with `input_cache_read` and
 * `input_cache_write` charges the prompt tokens the provider read from or wrote to its cache at those
 * prices, and the rest at the prompt price — in the answer's usage, the generation and the key's
 * usage, streamed or not, and when the stream is cut after the provider counted the prompt. /models
 * lists the cache prices of the endpoints that have them. Regression: cached tokens were charged at
 * the full prompt price (Anthropic bills reads at a tenth of it and writes at 1.25×). Writes for an
 * hour (`cache_control: { ttl: "1h" }`, Anthropic's `cache_creation.ephemeral_1h_input_tokens`) cost
 * `input_cache_write_1h`, by default on Anthropic twice the prompt price: they were charged as
 * five-minute writes, 37.5 % below what Anthropic bills (an outside checker's finding).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, toUnits, waitForGeneration, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
/** 10 uncached prompt tokens, 100 written to the cache, 50 read from it: a prompt of 160. */
const START_USAGE = {
  input_tokens: 10,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 50,
  output_tokens: 1,
};
// Units are nano-USD: 1,000 per prompt token, 100 per cache read, 1,250 per cache write, 2,000 per completion token.
const PRICED = {
  prompt: '0.000001',
  completion: '0.000002',
  input_cache_read: '0.0000001',
  input_cache_write: '0.00000125',
};
const PROMPT_UNITS = 10 * 1000 + 50 * 100 + 100 * 1250;
const ANSWER_UNITS = PROMPT_UNITS + 3 * 2000;
/** The same prompt, 60 of its 100 cache writes for an hour. */
const HOUR_USAGE = {
  ...START_USAGE,
  cache_creation: { ephemeral_5m_input_tokens: 40, ephemeral_1h_input_tokens: 60 },
};

describe('prompt-cache prices', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    const answerWith = (usage: Record<string, unknown>) => () => [
      A.start(usage),
      A.textStart(0),
      A.text(0, 'Hi'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 3 }),
      A.messageStop(),
    ];
    const answer = answerWith(START_USAGE);
    upstream.scripts.set('claude-cache', answer);
    const hourAnswer = answerWith(HOUR_USAGE);
    upstream.scripts.set('claude-hour', hourAnswer);
    upstream.scripts.set('claude-hour-priced', hourAnswer);
    upstream.scripts.set('claude-unpriced', answer);
    // The provider counted the prompt (message_start) and then the connection broke mid-answer.
    upstream.scripts.set('claude-cut', () => [
      A.start(START_USAGE),
      A.textStart(0),
      A.text(0, 'Hello the'),
      { wait: 100 },
      { reset: true },
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'anth', kind: 'anthropic' }],
      models: [
        { id: 'native/claude-cache', endpoints: [{ provider: 'anth', model: 'claude-cache', pricing: PRICED }] },
        { id: 'native/claude-cut', endpoints: [{ provider: 'anth', model: 'claude-cut', pricing: PRICED }] },
        { id: 'native/claude-unpriced', endpoints: [{ provider: 'anth', model: 'claude-unpriced' }] },
        { id: 'native/claude-hour', endpoints: [{ provider: 'anth', model: 'claude-hour', pricing: PRICED }] },
        {
          id: 'native/claude-hour-priced',
          endpoints: [
            {
              provider: 'anth',
              model: 'claude-hour-priced',
              pricing: { ...PRICED, input_cache_write_1h: '0.0000015' },
            },
          ],
        },
      ],
      timeouts: FAST,
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const body = (model: string) => ({ model, messages: [{ role: 'user', content: 'Hi' }] });

  it('non-streamed: reads and writes at their prices, in the usage, the generation and the key usage', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const r = await chat(gw, key, body('native/claude-cache'));
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.prompt_tokens).toBe(160);
    expect(toUnits(r.json.usage.cost)).toBe(ANSWER_UNITS);
    expect(toUnits(r.json.usage.cost_details.upstream_inference_prompt_cost)).toBe(PROMPT_UNITS);
    const generation = await waitForGeneration(gw, r.json.id, key);
    expect(toUnits(generation.json.data.total_cost)).toBe(ANSWER_UNITS);
    const current = await getJson(gw, '/key', key);
    expect(toUnits(current.json.data.usage)).toBe(ANSWER_UNITS);
  });

  it('streamed: the usage chunk charges the same', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const r = await chatStream(gw, key, body('native/claude-cache'));
    const usage = r.events.find((e) => e.usage)?.usage;
    expect(toUnits(usage.cost)).toBe(ANSWER_UNITS);
  });

  it('a stream cut after the provider counted the prompt charges its cache tokens at their prices', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const r = await chatStream(gw, key, body('native/claude-cut'));
    const id = r.events.find((e) => typeof e.id === 'string')?.id as string;
    expect(
      r.events.some((e) => e.error),
      r.raw,
    ).toBe(true);
    const generation = await waitForGeneration(gw, id, key);
    expect(generation.status).toBe(200);
    const g = generation.json.data;
    expect(g.tokens_prompt).toBe(160);
    // The prompt at its cache prices; the completion is our estimate of the text produced.
    expect(toUnits(g.total_cost)).toBe(PROMPT_UNITS + g.tokens_completion * 2000);
  });

  it('writes for an hour: twice the prompt price on Anthropic by default, else input_cache_write_1h; streamed or not', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const rest = 10 * 1000 + 50 * 100 + 40 * 1250 + 3 * 2000;
    const byDefault = await chat(gw, key, body('native/claude-hour'));
    expect(byDefault.status, byDefault.text).toBe(200);
    expect(toUnits(byDefault.json.usage.cost)).toBe(rest + 60 * 2000);
    const streamed = await chatStream(gw, key, body('native/claude-hour'));
    expect(toUnits(streamed.events.find((e) => e.usage)?.usage.cost)).toBe(rest + 60 * 2000);
    const priced = await chat(gw, key, body('native/claude-hour-priced'));
    expect(toUnits(priced.json.usage.cost)).toBe(rest + 60 * 1500);
    const generation = await waitForGeneration(gw, priced.json.id, key);
    expect(toUnits(generation.json.data.total_cost)).toBe(rest + 60 * 1500);
  });

  it('without cache prices, cached tokens cost what the prompt costs', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const r = await chat(gw, key, body('native/claude-unpriced'));
    expect(r.status, r.text).toBe(200);
    expect(toUnits(r.json.usage.cost)).toBe(160 * 1000 + 3 * 2000);
  });

  it('/models and the endpoints list show the cache prices where an endpoint has them', async () => {
    const models = await getJson(gw, '/models');
    const byId = new Map((models.json.data as { id: string; pricing: Record<string, string> }[]).map((m) => [m.id, m]));
    expect(byId.get('native/claude-cache')!.pricing).toMatchObject({
      input_cache_read: '0.0000001',
      input_cache_write: '0.00000125',
    });
    expect(byId.get('native/claude-unpriced')!.pricing).not.toHaveProperty('input_cache_read');
    const endpoints = await getJson(gw, '/models/native/claude-cache/endpoints');
    expect(endpoints.json.data.endpoints[0].pricing).toMatchObject({ input_cache_write: '0.00000125' });
  });
});
