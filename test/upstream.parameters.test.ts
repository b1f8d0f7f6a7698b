/**
 * Issue 8, finding 4: only documented parameters (and an endpoint's listed extras) reach the
 * provider. Before the fix `service_tier: "priority"`, `store: true`, `web_search_options` and
 * `modalities: ["text","audio"]` all reached the upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICES = { prompt: '0.000001', completion: '0.000002' };
const MESSAGES = [{ role: 'user', content: 'hi' }];

describe('what is forwarded upstream', () => {
  let gw: TestGateway;
  let upstream: RecordingUpstream;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'rec',
          name: 'Recorder',
          kind: 'openai',
          base_url: upstream.url,
          api_key: 'rec-key-000000',
          timeouts: {},
        });
        file.models.push(
          {
            id: 'test/plain',
            name: 'plain',
            context_length: 8192,
            endpoints: [{ provider: 'rec', model: 'plain', pricing: PRICES }],
          },
          {
            id: 'test/extras',
            name: 'extras',
            context_length: 8192,
            // The operator lists an extra parameter and takes priority processing into its prices.
            endpoints: [
              {
                provider: 'rec',
                model: 'extras',
                pricing: PRICES,
                supported_parameters: ['max_tokens', 'reasoning_effort', 'service_tier'],
              },
            ],
          },
        );
      },
    });
    accountId = await gw.createAccount(1);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('forwards the documented parameters and drops unknown and legacy fields silently', async () => {
    upstream.seen.length = 0;
    const sent = {
      model: 'test/plain',
      messages: MESSAGES,
      temperature: 0.3,
      top_p: 0.9,
      seed: 7,
      stop: ['\n'],
      user: 'u-1',
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      // Not documented: dropped.
      metadata: { team: 'x' },
      reasoning_effort: 'high', // not listed by this endpoint
      safety_identifier: 'abc',
      // Inactive values of the costly features: accepted, not forwarded.
      service_tier: 'auto',
      store: false,
      modalities: ['text'],
      // Legacy OpenRouter fields: accepted, never forwarded.
      transforms: ['middle-out'],
      route: 'fallback',
      usage: { include: true },
      provider: { sort: 'price' },
      models: ['test/plain'],
    };
    const answer = await chat(gw, key, sent);
    expect(answer.status, answer.text).toBe(200);
    expect(upstream.seen).toHaveLength(1);
    const body = upstream.seen[0]!.body;
    expect(Object.keys(body).sort()).toEqual(
      [
        'messages',
        'model',
        'stream',
        'stream_options',
        'temperature',
        'top_p',
        'seed',
        'stop',
        'user',
        'parallel_tool_calls',
        'response_format',
        'max_tokens',
      ].sort(),
    );
    expect(body).toMatchObject({
      model: 'plain',
      temperature: 0.3,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 4096,
    });
  });

  it('drops a documented parameter the endpoint does not list (OpenAI answers an unknown argument with 400)', async () => {
    upstream.seen.length = 0;
    const answer = await chat(gw, key, {
      model: 'test/plain',
      messages: MESSAGES,
      top_k: 40,
      repetition_penalty: 1.1,
      min_p: 0.05,
      top_a: 0.1,
      logit_bias: { '1': 1 },
      logprobs: true,
      top_logprobs: 2,
      reasoning: { effort: 'high' },
      include_reasoning: true,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(Object.keys(upstream.seen[0]!.body).sort()).toEqual(
      ['max_tokens', 'messages', 'model', 'stream', 'stream_options'].sort(),
    );
    // An endpoint that lists OpenAI's own reasoning_effort gets the caller's reasoning.effort in that form.
    upstream.seen.length = 0;
    const carried = await chat(gw, key, { model: 'test/extras', messages: MESSAGES, reasoning: { effort: 'high' } });
    expect(carried.status, carried.text).toBe(200);
    expect(upstream.seen[0]!.body).toMatchObject({ reasoning_effort: 'high' });
    expect(upstream.seen[0]!.body).not.toHaveProperty('reasoning');

    // With require_parameters, any reasoning field needs an endpoint that takes reasoning.
    upstream.seen.length = 0;
    const required = await chat(gw, key, {
      model: 'test/plain',
      models: ['test/plain', 'test/extras'],
      messages: MESSAGES,
      include_reasoning: true,
      provider: { require_parameters: true },
    });
    expect(required.status, required.text).toBe(200);
    expect(required.json.model).toBe('test/extras');
  });

  it("null means absent for every optional parameter (as in OpenAI's schema): the request is served, and no null reaches the provider", async () => {
    const nulls = {
      stream: null,
      models: null,
      provider: null,
      tools: null,
      tool_choice: null,
      response_format: null,
      user: null,
      max_tokens: null,
      temperature: null,
      seed: null,
      stop: null,
      logit_bias: null,
      service_tier: null,
      web_search_options: null,
    };
    upstream.seen.length = 0;
    const answer = await chat(gw, key, { model: 'test/plain', messages: MESSAGES, ...nulls });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.object).toBe('chat.completion');
    const { stream: _, ...streamedNulls } = nulls;
    const streamed = await chatStream(gw, key, { model: 'test/plain', messages: MESSAGES, ...streamedNulls });
    expect(streamed.status).toBe(200);
    expect(upstream.seen).toHaveLength(2);
    for (const { body } of upstream.seen) {
      expect(Object.entries(body).filter(([, value]) => value === null)).toEqual([]);
      expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream', 'stream_options']);
    }
  });

  it.each([
    ['service_tier', 'priority'],
    ['service_tier', 'flex'],
    ['store', true],
    ['web_search_options', { search_context_size: 'high' }],
    ['modalities', ['text', 'audio']],
    ['audio', { voice: 'alloy', format: 'wav' }],
    ['prediction', { type: 'content', content: 'x' }],
  ])('refuses %s = %j with 400 naming it, forwards nothing and charges nothing', async (field, value) => {
    upstream.seen.length = 0;
    const before = await balanceUnits(gw, accountId);
    const refused = await chat(gw, key, { model: 'test/plain', messages: MESSAGES, [field]: value });
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toContain(field);
    const streamed = await chatStream(gw, key, { model: 'test/plain', messages: MESSAGES, [field]: value });
    expect(streamed.status).toBe(400);
    expect(upstream.seen).toHaveLength(0);
    expect(await balanceUnits(gw, accountId)).toBe(before);
  });

  it("forwards an endpoint's listed extras (a costly one included) to that endpoint only", async () => {
    upstream.seen.length = 0;
    const answer = await chat(gw, key, {
      model: 'test/extras',
      messages: MESSAGES,
      reasoning_effort: 'low',
      service_tier: 'priority',
      metadata: { x: 1 },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(upstream.seen[0]!.body).toMatchObject({ reasoning_effort: 'low', service_tier: 'priority' });
    expect(upstream.seen[0]!.body).not.toHaveProperty('metadata');
    // The same request for a model whose endpoint does not list service_tier is refused.
    expect(
      (
        await chat(gw, key, {
          model: 'test/plain',
          messages: MESSAGES,
          service_tier: 'priority',
          models: ['test/extras'],
        })
      ).status,
    ).toBe(400);
  });
});
