/**
 * The Anthropic and Gemini adapters behind a real gateway: OpenAI-format requests in, each API's
 * own format on the wire to loopback fakes of those APIs, OpenAI-format answers, usage and cost out,
 * and their rate-limit and overload errors mapped or failed over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_TEXT,
  FAKE_CLAUDE_TOOL_ANSWER,
  startFakeAnthropic,
  type FakeUpstream,
} from './helpers/fake-anthropic.js';
import { FAKE_GEMINI_KEY, FAKE_GEMINI_TEXT, FAKE_GEMINI_TOOL_ANSWER, startFakeGemini } from './helpers/fake-gemini.js';
import { chat, chatStream, startTestGateway, toUnits, waitForGeneration, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const PRICES = { prompt: '0.000001', completion: '0.000002' }; // 1000 and 2000 nano-USD per token
const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];
const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { location: { type: 'string' } } },
  },
};

function model(id: string, ...endpoints: [provider: string, upstream: string][]) {
  return {
    id,
    name: id,
    context_length: 200_000,
    endpoints: endpoints.map(([provider, upstream]) => ({ provider, model: upstream, pricing: PRICES })),
  };
}

/** The tool calls an OpenAI client rebuilds from stream chunks. */
function streamedToolCalls(
  events: any[],
): { id: string; type: string; function: { name: string; arguments: string } }[] {
  const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  for (const event of events) {
    for (const call of event.choices?.[0]?.delta?.tool_calls ?? []) {
      const slot = (calls[call.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      slot.id ||= call.id ?? '';
      slot.function.name ||= call.function?.name ?? '';
      slot.function.arguments += call.function?.arguments ?? '';
    }
  }
  return calls;
}

function streamedText(events: any[]): string {
  return events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
}

describe('Anthropic and Gemini providers through the gateway', () => {
  let gw: TestGateway;
  let key: string;
  let anthropic: FakeUpstream;
  let gemini: FakeUpstream;

  beforeAll(async () => {
    [anthropic, gemini] = await Promise.all([startFakeAnthropic(), startFakeGemini()]);
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push(
          {
            id: 'anthropic',
            name: 'Anthropic',
            kind: 'anthropic',
            base_url: anthropic.url,
            api_key: FAKE_ANTHROPIC_KEY,
            timeouts: FAST,
            stream_upstream: false,
          },
          {
            id: 'gemini',
            name: 'Google',
            kind: 'gemini',
            base_url: gemini.url,
            api_key: FAKE_GEMINI_KEY,
            timeouts: FAST,
            stream_upstream: false,
          },
        );
      },
      extraModels: [
        model('anthropic/claude-fake', ['anthropic', 'claude-fake']),
        {
          ...model('anthropic/claude-structured', ['anthropic', 'claude-fake']),
          endpoints: [
            {
              provider: 'anthropic',
              model: 'claude-fake',
              pricing: PRICES,
              supported_parameters: ['max_tokens', 'tools', 'response_format', 'structured_outputs'],
            },
          ],
        },
        model('anthropic/claude-overloaded', ['anthropic', 'claude-fake-529'], ['gemini', 'gemini-fake']),
        model('anthropic/claude-rate-limited', ['anthropic', 'claude-fake-429']),
        model('google/gemini-fake', ['gemini', 'gemini-fake']),
        model('google/gemini-busy', ['gemini', 'gemini-fake-429'], ['anthropic', 'claude-fake']),
        model('google/gemini-bad-request', ['gemini', 'gemini-fake-400'], ['anthropic', 'claude-fake']),
        {
          ...model('test/budgeted', ['gemini', 'gemini-fake-429'], ['anthropic', 'claude-fake']),
          endpoints: [
            { provider: 'gemini', model: 'gemini-fake-429', pricing: PRICES, max_completion_tokens: 300 },
            { provider: 'anthropic', model: 'claude-fake', pricing: PRICES, max_completion_tokens: 500 },
          ],
        },
      ],
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([anthropic.close(), gemini.close()]);
  });

  describe('Anthropic', () => {
    it('answers a non-streamed request in OpenAI format with usage and exact cost', async () => {
      const r = await chat(gw, key, { model: 'anthropic/claude-fake', messages: MESSAGES, temperature: 0.5 });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({
        object: 'chat.completion',
        model: 'anthropic/claude-fake',
        provider: 'Anthropic',
      });
      expect(r.json.choices[0]).toMatchObject({
        index: 0,
        message: { role: 'assistant', content: FAKE_CLAUDE_TEXT },
        finish_reason: 'stop',
        native_finish_reason: 'end_turn',
      });
      // 20 input + 4 cache reads; 9 output.
      expect(r.json.usage).toMatchObject({
        prompt_tokens: 24,
        completion_tokens: 9,
        total_tokens: 33,
        prompt_tokens_details: { cached_tokens: 4 },
      });
      expect(toUnits(r.json.usage.cost)).toBe(24 * 1000 + 9 * 2000);

      const sent = anthropic.requests.at(-1);
      expect(sent?.path).toBe('/v1/messages');
      expect(sent?.headers).toMatchObject({ 'x-api-key': FAKE_ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' });
      expect(sent?.body).toEqual({
        model: 'claude-fake',
        max_tokens: 4096,
        system: [{ type: 'text', text: 'You are terse.' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }],
        temperature: 0.5,
      });
    });

    it('streams OpenAI chunks, then the usage chunk with the cost and [DONE]', async () => {
      const r = await chatStream(gw, key, { model: 'anthropic/claude-fake', messages: MESSAGES });
      expect(r.status, r.raw).toBe(200);
      expect(r.done).toBe(true);
      expect(r.events[0].choices[0].delta.role).toBe('assistant');
      expect(streamedText(r.events)).toBe(FAKE_CLAUDE_TEXT);
      const finish = r.events.find((e) => e.choices?.[0]?.finish_reason);
      expect(finish.choices[0]).toMatchObject({ finish_reason: 'stop', native_finish_reason: 'end_turn' });
      const usage = r.events.at(-1).usage;
      expect(usage).toMatchObject({
        prompt_tokens: 24,
        completion_tokens: 9,
        prompt_tokens_details: { cached_tokens: 4 },
      });
      expect(toUnits(usage.cost)).toBe(24 * 1000 + 9 * 2000);
      expect(anthropic.requests.at(-1)?.body.stream).toBe(true);
    });

    it('makes a tool round trip, streamed and not', async () => {
      const ask = {
        model: 'anthropic/claude-fake',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [WEATHER_TOOL],
        tool_choice: 'auto',
      };
      const first = await chat(gw, key, ask);
      expect(first.status, first.text).toBe(200);
      const call = {
        id: 'toolu_fake_01',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' },
      };
      expect(first.json.choices[0]).toMatchObject({
        message: { content: 'Let me check.', tool_calls: [call] },
        finish_reason: 'tool_calls',
        native_finish_reason: 'tool_use',
      });
      expect(anthropic.requests.at(-1)?.body).toMatchObject({
        tools: [{ name: 'get_weather', description: 'Current weather' }],
        tool_choice: { type: 'auto' },
      });

      const streamed = await chatStream(gw, key, ask);
      expect(streamedToolCalls(streamed.events)).toEqual([call]);
      expect(streamed.events.find((e) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason).toBe('tool_calls');

      const messages = [
        ...ask.messages,
        first.json.choices[0].message,
        { role: 'tool', tool_call_id: 'toolu_fake_01', content: '{"temp_c":18}' },
      ];
      const second = await chat(gw, key, { ...ask, messages });
      expect(second.json.choices[0].message.content).toBe(FAKE_CLAUDE_TOOL_ANSWER);
      expect(anthropic.requests.at(-1)?.body.messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            {
              type: 'tool_use',
              id: 'toolu_fake_01',
              name: 'get_weather',
              input: { location: 'Paris', unit: 'celsius' },
            },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_fake_01', content: '{"temp_c":18}' }] },
      ]);
    });

    it('sends a JSON schema as structured output where the endpoint lists structured_outputs, and drops it elsewhere', async () => {
      const schema = { type: 'object', properties: { greeting: { type: 'string' } }, additionalProperties: false };
      const response_format = { type: 'json_schema', json_schema: { name: 'greeting', strict: true, schema } };
      const structured = await chat(gw, key, {
        model: 'anthropic/claude-structured',
        messages: MESSAGES,
        response_format,
      });
      expect(structured.status, structured.text).toBe(200);
      expect(anthropic.requests.at(-1)?.body.output_config).toEqual({ format: { type: 'json_schema', schema } });
      const plain = await chat(gw, key, { model: 'anthropic/claude-fake', messages: MESSAGES, response_format });
      expect(plain.status, plain.text).toBe(200);
      expect(anthropic.requests.at(-1)?.body).not.toHaveProperty('output_config');
      // What /models says, and what require_parameters routes by.
      const models = (await (await fetch(`${gw.url}/api/v1/models`)).json()) as {
        data: { id: string; supported_parameters: string[] }[];
      };
      const params = (id: string) => models.data.find((m) => m.id === id)?.supported_parameters ?? [];
      expect(params('anthropic/claude-structured')).toEqual(
        expect.arrayContaining(['response_format', 'structured_outputs']),
      );
      expect(params('anthropic/claude-fake')).not.toContain('response_format');
      const required = await chat(gw, key, {
        model: 'anthropic/claude-fake',
        messages: MESSAGES,
        response_format,
        provider: { require_parameters: true },
      });
      expect(required.status).toBe(404);
    });

    it('fails over from an overloaded (529) Anthropic to Gemini', async () => {
      const r = await chat(gw, key, { model: 'anthropic/claude-overloaded', messages: MESSAGES });
      expect(r.status, r.text).toBe(200);
      expect(r.json.provider).toBe('Google');
      expect(r.json.choices[0].message.content).toBe(FAKE_GEMINI_TEXT);
      const streamed = await chatStream(gw, key, { model: 'anthropic/claude-overloaded', messages: MESSAGES });
      expect(streamedText(streamed.events)).toBe(FAKE_GEMINI_TEXT);
      expect(streamed.done).toBe(true);
    });

    it('answers 429 with the upstream retry-after when its only endpoint is rate-limited', async () => {
      const r = await chat(gw, key, { model: 'anthropic/claude-rate-limited', messages: MESSAGES });
      expect(r.status, r.text).toBe(429);
      expect(r.headers['retry-after']).toBe('7');
      expect(r.json.error.metadata).toMatchObject({
        error_type: 'rate_limit_exceeded',
        provider_code: 'rate_limit_error',
      });
    });
  });

  describe('Gemini', () => {
    it('answers a non-streamed request with thinking counted as completion and reasoning', async () => {
      const r = await chat(gw, key, { model: 'google/gemini-fake', messages: MESSAGES, max_tokens: 64 });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ model: 'google/gemini-fake', provider: 'Google' });
      expect(r.json.choices[0]).toMatchObject({
        message: { role: 'assistant', content: FAKE_GEMINI_TEXT },
        finish_reason: 'stop',
        native_finish_reason: 'STOP',
      });
      expect(r.json.usage).toMatchObject({
        prompt_tokens: 30,
        completion_tokens: 13,
        prompt_tokens_details: { cached_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 5 },
      });
      expect(toUnits(r.json.usage.cost)).toBe(30 * 1000 + 13 * 2000);

      const sent = gemini.requests.at(-1);
      expect(sent?.path).toBe('/v1beta/models/gemini-fake:generateContent');
      expect(sent?.headers['x-goog-api-key']).toBe(FAKE_GEMINI_KEY);
      expect(sent?.body).toEqual({
        contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }],
        systemInstruction: { parts: [{ text: 'You are terse.' }] },
        generationConfig: { maxOutputTokens: 64 },
      });
      const generation = await waitForGeneration(gw, r.json.id, key);
      expect(generation.json.data).toMatchObject({
        native_tokens_reasoning: 5,
        native_tokens_cached: 10,
        finish_reason: 'stop',
        native_finish_reason: 'STOP',
      });
    });

    it('streams a body that has no end marker and ends it with usage and [DONE]', async () => {
      const r = await chatStream(gw, key, { model: 'google/gemini-fake', messages: MESSAGES });
      expect(r.status, r.raw).toBe(200);
      expect(gemini.requests.at(-1)?.path).toBe('/v1beta/models/gemini-fake:streamGenerateContent?alt=sse');
      expect(r.events[0].choices[0].delta.role).toBe('assistant');
      expect(streamedText(r.events)).toBe(FAKE_GEMINI_TEXT);
      expect(r.events.find((e) => e.choices?.[0]?.finish_reason)?.choices[0]).toMatchObject({
        finish_reason: 'stop',
        native_finish_reason: 'STOP',
      });
      expect(r.done).toBe(true);
      const usage = r.events.at(-1).usage;
      expect(usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 13 });
      expect(toUnits(usage.cost)).toBe(30 * 1000 + 13 * 2000);
    });

    it('makes a tool round trip, naming the functionResponse from the earlier call', async () => {
      const ask = {
        model: 'google/gemini-fake',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
      };
      const first = await chat(gw, key, ask);
      expect(first.status, first.text).toBe(200);
      const call = {
        id: 'call_fakeResponse01_0',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' },
        extra_content: { google: { thought_signature: 'fake-signature' } },
      };
      expect(first.json.choices[0]).toMatchObject({
        message: { content: null, tool_calls: [call] },
        finish_reason: 'tool_calls',
        native_finish_reason: 'STOP',
      });
      expect(gemini.requests.at(-1)?.body).toMatchObject({
        tools: [
          {
            functionDeclarations: [
              {
                name: 'get_weather',
                description: 'Current weather',
                parametersJsonSchema: WEATHER_TOOL.function.parameters,
              },
            ],
          },
        ],
        toolConfig: { functionCallingConfig: { mode: 'ANY' } },
      });

      const streamed = await chatStream(gw, key, ask);
      expect(streamedToolCalls(streamed.events)).toEqual([{ id: call.id, type: 'function', function: call.function }]);

      const messages = [
        ...ask.messages,
        first.json.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: '{"temp_c":18}' },
      ];
      const second = await chat(gw, key, { ...ask, messages, tool_choice: 'auto' });
      expect(second.json.choices[0].message.content).toBe(FAKE_GEMINI_TOOL_ANSWER);
      expect(gemini.requests.at(-1)?.body.contents).toEqual([
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        {
          role: 'model',
          parts: [
            {
              functionCall: { name: 'get_weather', args: { location: 'Paris', unit: 'celsius' } },
              thoughtSignature: 'fake-signature',
            },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp_c: 18 } } }] },
      ]);
    });

    it('fails over from a rate-limited (429) Gemini to Anthropic', async () => {
      const r = await chat(gw, key, { model: 'google/gemini-busy', messages: MESSAGES });
      expect(r.status, r.text).toBe(200);
      expect(r.json.provider).toBe('Anthropic');
      expect(r.json.choices[0].message.content).toBe(FAKE_CLAUDE_TEXT);
    });

    it('returns a 400 INVALID_ARGUMENT to the caller without failing over', async () => {
      const before = anthropic.requests.length;
      const r = await chat(gw, key, { model: 'google/gemini-bad-request', messages: MESSAGES });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error.metadata).toMatchObject({
        error_type: 'bad_request',
        provider_code: 'INVALID_ARGUMENT',
        provider_name: 'Google',
      });
      expect(anthropic.requests.length).toBe(before);
    });
  });

  it('sends each endpoint its own completion budget in its API: maxOutputTokens to Gemini, max_tokens to Anthropic (issue 8, finding 2)', async () => {
    const r = await chat(gw, key, { model: 'test/budgeted', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(gemini.requests.at(-1)?.body.generationConfig).toEqual({ maxOutputTokens: 300 });
    expect(anthropic.requests.at(-1)?.body.max_tokens).toBe(500);
  });
});
