import { describe, expect, it } from 'vitest';
import type { EndpointTarget } from '../types.js';
import { anthropicAdapter } from './adapter.js';

const target: EndpointTarget = {
  providerId: 'anthropic',
  baseUrl: 'https://api.anthropic.com',
  apiKey: 'sk-ant-test-123',
  upstreamModel: 'claude-sonnet-4-20250514',
  extraHeaders: { 'anthropic-beta': 'prompt-caching-2024-07-31' },
};

function bodyOf(callerBody: Record<string, unknown>, stream = false): Record<string, unknown> {
  return JSON.parse(anthropicAdapter.buildRequest(target, callerBody, stream).body) as Record<string, unknown>;
}

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
};

const LEGACY_FUNCTION_TURNS = [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
  { role: 'function', name: 'get_weather', content: '{"celsius":18}' },
];

describe('anthropicAdapter.buildRequest', () => {
  it('posts to /v1/messages with the key, the API version and extra headers', () => {
    const req = anthropicAdapter.buildRequest(target, { messages: [{ role: 'user', content: 'Hi' }] }, true);
    expect(req.url).toBe('https://api.anthropic.com/v1/messages');
    expect(req.headers).toEqual({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'accept-encoding': 'identity',
      'anthropic-version': '2023-06-01',
      'x-api-key': 'sk-ant-test-123',
      'anthropic-beta': 'prompt-caching-2024-07-31',
    });
    expect(JSON.parse(req.body)).toMatchObject({ model: 'claude-sonnet-4-20250514', stream: true });
  });

  it('accepts a base url with a trailing slash or /v1 and sends no key when there is none', () => {
    const slash = anthropicAdapter.buildRequest({ ...target, baseUrl: 'http://127.0.0.1:9/' }, { messages: [] }, false);
    expect(slash.url).toBe('http://127.0.0.1:9/v1/messages');
    const v1 = anthropicAdapter.buildRequest(
      { ...target, baseUrl: 'https://proxy.example/anthropic/v1', apiKey: null },
      { messages: [] },
      false,
    );
    expect(v1.url).toBe('https://proxy.example/anthropic/v1/messages');
    expect(v1.headers).not.toHaveProperty('x-api-key');
  });

  it('moves system and developer messages to `system` and defaults max_tokens to 4096', () => {
    const body = bodyOf({
      model: 'anthropic/claude-sonnet-4',
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'developer',
          content: [{ type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } }],
        },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'You are terse.' },
      { type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } },
    ]);
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    expect(body.max_tokens).toBe(4096);
    expect(body).not.toHaveProperty('stream');
  });

  it('maps sampling parameters and drops the ones Anthropic lacks', () => {
    const body = bodyOf({
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 50,
      max_completion_tokens: 80,
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      stop: 'END',
      user: 'user-42',
      seed: 7,
      frequency_penalty: 0.5,
      response_format: { type: 'json_object' },
      provider: { order: ['anthropic'] },
    });
    expect(body).toEqual({
      model: 'claude-sonnet-4-20250514',
      max_tokens: 80,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
    });
    expect(bodyOf({ messages: [], stop: ['a', 'b'] }).stop_sequences).toEqual(['a', 'b']);
  });

  it("sends OpenAI's deprecated function_call and function result as tool_use and tool_result", () => {
    expect(bodyOf({ messages: LEGACY_FUNCTION_TURNS }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_fn_0', name: 'get_weather', input: { location: 'Paris' } }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'call_fn_0', content: '{"celsius":18}' }],
      },
    ]);
  });

  it('sends a json_schema response_format as output_config.format, and strict tools, only where the endpoint has structured outputs', () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    const strictTool = { ...WEATHER_TOOL, function: { ...WEATHER_TOOL.function, strict: true } };
    const request = {
      messages: [{ role: 'user', content: 'Where?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', strict: true, schema } },
      tools: [strictTool, WEATHER_TOOL],
    };
    const structured = { ...target, structuredOutputs: true };
    const sent = JSON.parse(anthropicAdapter.buildRequest(structured, request, false).body) as Record<string, any>;
    expect(sent.output_config).toEqual({ format: { type: 'json_schema', schema } });
    expect(sent.tools.map((t: { strict?: boolean }) => t.strict)).toEqual([true, undefined]);
    // Without structured outputs (older models refuse both fields): dropped, as before.
    const plain = bodyOf(request);
    expect(plain.output_config).toBeUndefined();
    expect((plain.tools as { strict?: boolean }[]).some((t) => 'strict' in t)).toBe(false);
    // json_object has no Anthropic form; a schema that is not an object is not sent.
    for (const response_format of [
      { type: 'json_object' },
      { type: 'json_schema', json_schema: { name: 'x' } },
      { type: 'json_schema', json_schema: { name: 'x', schema: [schema] } },
      { type: 'text' },
    ]) {
      const body = JSON.parse(
        anthropicAdapter.buildRequest(structured, { messages: request.messages, response_format }, false).body,
      ) as Record<string, unknown>;
      expect(body.output_config).toBeUndefined();
    }
  });

  it("normalises what Anthropic alone refuses: temperature above 1, a prefill's trailing whitespace, a conversation without a user turn first", () => {
    const user = { role: 'user', content: 'Hi' };
    expect(bodyOf({ messages: [user], temperature: 1.8 }).temperature).toBe(1);
    expect(bodyOf({ messages: [user], temperature: 0.7 }).temperature).toBe(0.7);
    // Stop sequences pass as given: dropping one would run the answer past where the caller asked to stop.
    expect(bodyOf({ messages: [user], stop: ['\n', 'END'] }).stop_sequences).toEqual(['\n', 'END']);
    // A prefill ending in whitespace loses it; one of whitespace alone goes, with its turn.
    expect(bodyOf({ messages: [user, { role: 'assistant', content: 'The answer is ' }] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'The answer is' }] },
    ]);
    expect(bodyOf({ messages: [user, { role: 'assistant', content: ' \n' }] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
    ]);
    // Several trailing blocks: the whitespace-only ones go, then the last one left is trimmed.
    const parts = [
      { type: 'text', text: 'Answer: ' },
      { type: 'text', text: '  ' },
    ];
    expect(bodyOf({ messages: [user, { role: 'assistant', content: parts }] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Answer:' }] },
    ]);
    // Whitespace inside an earlier assistant turn is the conversation's: kept.
    expect((bodyOf({ messages: [{ role: 'assistant', content: 'So ' }, user] }).messages as unknown[])[0]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'So ' }],
    });
    // A system prompt alone becomes the user turn Anthropic needs.
    const alone = bodyOf({ messages: [{ role: 'system', content: 'Write a haiku about rain.' }] });
    expect(alone.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Write a haiku about rain.' }] }]);
    expect(alone).not.toHaveProperty('system');
    // A system prompt and then a prefill, no user turn: the instructions become it.
    const prefilled = bodyOf({
      messages: [
        { role: 'system', content: 'Write a haiku about rain.' },
        { role: 'assistant', content: 'Sure, ' },
      ],
    });
    expect(prefilled.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Write a haiku about rain.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Sure,' }] },
    ]);
    // A conversation with a user turn after an assistant greeting keeps its system prompt.
    const greeted = bodyOf({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'assistant', content: 'Hello! How can I help?' },
        user,
      ],
    });
    expect(greeted.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    expect((greeted.messages as { role: string }[]).map((m) => m.role)).toEqual(['assistant', 'user']);
  });

  it('turns image parts into base64 or url image blocks', () => {
    const body = bodyOf({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('translates a tool round trip: tool_calls to tool_use, tool results into one user turn', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Weather and time in Paris?' },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
            { id: 'toolu_02', type: 'function', function: { name: 'get_time', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01', content: '{"temp_c":18}' },
        { role: 'tool', tool_call_id: 'toolu_02', content: [{ type: 'text', text: '14:05' }] },
        { role: 'user', content: 'Thanks!' },
        { role: 'assistant', content: '' }, // empty turns are dropped
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather and time in Paris?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { location: 'Paris' } },
          { type: 'tool_use', id: 'toolu_02', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"temp_c":18}' },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: '14:05' }] },
          { type: 'text', text: 'Thanks!' },
        ],
      },
    ]);
  });

  it('sends the images of a tool result inside its tool_result block', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Screenshot?' },
        {
          role: 'assistant',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'toolu_1',
          content: [
            { type: 'text', text: 'Here it is' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect((body.messages as unknown[]).at(-1)).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [
            { type: 'text', text: 'Here it is' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
    });
  });

  it('merges consecutive turns of one role', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'One' },
        { role: 'user', content: 'Two' },
        { role: 'assistant', content: 'Three' },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'One' },
          { type: 'text', text: 'Two' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Three' }] },
    ]);
  });

  it('maps function tools and every tool_choice', () => {
    const base = {
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [WEATHER_TOOL, { type: 'function', function: { name: 'noop' } }],
    };
    expect(bodyOf(base).tools).toEqual([
      { name: 'get_weather', description: 'Current weather', input_schema: WEATHER_TOOL.function.parameters },
      { name: 'noop', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(bodyOf(base)).not.toHaveProperty('tool_choice');
    expect(bodyOf({ ...base, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    expect(bodyOf({ ...base, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    expect(bodyOf({ ...base, tool_choice: 'required' }).tool_choice).toEqual({ type: 'any' });
    expect(
      bodyOf({ ...base, tool_choice: { type: 'function', function: { name: 'get_weather' } } }).tool_choice,
    ).toEqual({ type: 'tool', name: 'get_weather' });
    expect(bodyOf({ ...base, parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(bodyOf({ ...base, tool_choice: 'required', parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    expect(bodyOf({ messages: [], tool_choice: 'auto' })).not.toHaveProperty('tool_choice'); // no tools, no choice
  });

  it("sends reasoning_details back as thinking blocks, before text and tool_use, leaving out what is not Anthropic's", () => {
    const anthropic = (detail: Record<string, unknown>) => ({ ...detail, format: 'anthropic-claude-v1' });
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: 'Checking.',
          reasoning: 'Think, then call.',
          reasoning_details: [
            anthropic({ type: 'reasoning.text', text: 'Think, then call.', signature: 'SIG', index: 0 }),
            anthropic({ type: 'reasoning.encrypted', data: 'BLOB', index: 1 }),
            anthropic({ type: 'reasoning.text', text: 'unsigned', index: 2 }),
            anthropic({ type: 'reasoning.summary', summary: 'a summary', index: 3 }),
            { type: 'reasoning.encrypted', data: 'gemini-signature', format: 'google-gemini-v1', index: 0 },
            { type: 'reasoning.encrypted', data: 'openai-blob', format: 'openai-responses-v1', index: 0 },
            { type: 'reasoning.text', text: 'no format', signature: 'SIG' },
            'not an object',
            anthropic({ type: 'reasoning.text', text: '', signature: 'OMITTED-SIG', index: 4 }),
          ],
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
      ],
    });
    expect((body.messages as { content: unknown[] }[])[1]?.content).toEqual([
      { type: 'thinking', thinking: 'Think, then call.', signature: 'SIG' },
      { type: 'redacted_thinking', data: 'BLOB' },
      { type: 'thinking', thinking: '', signature: 'OMITTED-SIG' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    ]);
    // Only Anthropic-format details: an assistant turn with others only is its text alone.
    const other = bodyOf({
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: 'Hello',
          reasoning_details: [{ type: 'reasoning.text', text: 'x', format: 'x' }],
        },
      ],
    });
    expect((other.messages as { content: unknown[] }[])[1]?.content).toEqual([{ type: 'text', text: 'Hello' }]);
  });

  it('folds reasoning_details sent back as they streamed (text in pieces, the signature last) into whole blocks', () => {
    const anthropic = (detail: Record<string, unknown>) => ({ ...detail, format: 'anthropic-claude-v1' });
    const body = bodyOf({
      reasoning: { max_tokens: 2000 },
      max_tokens: 4000,
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          reasoning_details: [
            anthropic({ type: 'reasoning.text', text: 'Think, ', index: 0 }),
            anthropic({ type: 'reasoning.text', text: 'then call.', index: 0 }),
            anthropic({ type: 'reasoning.text', text: '', signature: 'SIG', index: 0 }),
            anthropic({ type: 'reasoning.encrypted', data: 'BLOB', index: 1 }),
          ],
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
      ],
    });
    expect((body.messages as { content: unknown[] }[])[1]?.content).toEqual([
      { type: 'thinking', thinking: 'Think, then call.', signature: 'SIG' },
      { type: 'redacted_thinking', data: 'BLOB' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    ]);
    // The turn starts with its thinking block: thinking stays on.
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
  });

  describe('thinking off where Anthropic refuses it, the request sent as an ordinary one', () => {
    const reasoning = { reasoning: { max_tokens: 2000 }, max_tokens: 4000, temperature: 0.5 };
    const call = { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } };

    it('a tool loop whose assistant turn lost its thinking blocks (or never had them: reasoning.exclude)', () => {
      const body = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: 'Checking.', tool_calls: [call] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
        ],
      });
      expect(body).not.toHaveProperty('thinking');
      // Without thinking, what thinking left out is sent again.
      expect(body.temperature).toBe(0.5);
    });

    it('a prefill (a trailing assistant message: a caller’s, or a continuation of a broken stream)', () => {
      const body = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Count to ten.' },
          { role: 'assistant', content: 'One, two,' },
        ],
      });
      expect(body).not.toHaveProperty('thinking');
    });

    it('but not a later step of a loop whose turn started with thinking (steps after it carry none unless interleaved)', () => {
      const signed = {
        type: 'reasoning.text',
        text: 'Weather, then time.',
        signature: 'SIG',
        format: 'anthropic-claude-v1',
        index: 0,
      };
      const second = { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{}' } };
      const body = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Weather and time?' },
          { role: 'assistant', content: null, reasoning_details: [signed], tool_calls: [call] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
          { role: 'assistant', content: null, tool_calls: [second] },
          { role: 'tool', tool_call_id: 'toolu_2', content: 'Noon' },
        ],
      });
      expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
      // The same loop whose first step lost its thinking block: off.
      const lost = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Weather and time?' },
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
          { role: 'assistant', content: null, reasoning_details: [signed], tool_calls: [second] },
          { role: 'tool', tool_call_id: 'toolu_2', content: 'Noon' },
        ],
      });
      expect(lost).not.toHaveProperty('thinking');
    });

    it('but not a new turn after a finished tool loop, nor an earlier assistant answer without tools', () => {
      const afterLoop = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: 'Checking.', tool_calls: [call] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
          { role: 'assistant', content: 'It is sunny.' },
          { role: 'user', content: 'And tomorrow?' },
        ],
      });
      expect(afterLoop.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
      const plain = bodyOf({
        ...reasoning,
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: 'How are you?' },
        ],
      });
      expect(plain.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    });
  });

  it.each([
    ['max_tokens', { reasoning: { max_tokens: 2048 } }, 8000, 2048],
    ['xhigh effort', { reasoning: { effort: 'xhigh' } }, 10_000, 9500],
    ['high effort', { reasoning: { effort: 'high' } }, 10_000, 8000],
    ['medium effort', { reasoning: { effort: 'medium' } }, 10_000, 5000],
    ['low effort', { reasoning: { effort: 'low' } }, 10_000, 2000],
    ['minimal effort', { reasoning: { effort: 'minimal' } }, 20_000, 2000],
    ['enabled: true (medium)', { reasoning: { enabled: true } }, 10_000, 5000],
    ['legacy reasoning_effort', { reasoning_effort: 'low' }, 10_000, 2000],
    ['legacy include_reasoning: true (medium)', { include_reasoning: true }, 10_000, 5000],
    ['exclude (still thinks)', { reasoning: { effort: 'high', exclude: true } }, 10_000, 8000],
    ['a budget below 1024, raised to it', { reasoning: { max_tokens: 100 } }, 8000, 1024],
    ['an effort below 1024, raised to it', { reasoning: { effort: 'minimal' } }, 4000, 1024],
    ['a budget above 32000, capped', { reasoning: { max_tokens: 50_000 } }, 64_000, 32_000],
    ['a budget at the completion limit, kept below it', { reasoning: { max_tokens: 8000 } }, 8000, 7999],
    ['the smallest limit that takes thinking', { reasoning: { effort: 'high' } }, 1025, 1024],
  ])('turns on thinking for %s', (_name, reasoning, maxTokens, budget) => {
    const body = bodyOf({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: maxTokens, ...reasoning });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
    expect(body.max_tokens).toBe(maxTokens); // the hold's budget is never raised
  });

  it.each([
    ['no reasoning field', {}, 8000],
    ['effort none', { reasoning: { effort: 'none' } }, 8000],
    ['enabled: false, whatever else', { reasoning: { enabled: false, max_tokens: 2048 } }, 8000],
    ['reasoning_effort none', { reasoning_effort: 'none' }, 8000],
    ['an effort it does not know', { reasoning: { effort: 'extreme' } }, 8000],
    ['exclude alone', { reasoning: { exclude: true } }, 8000],
    ['include_reasoning: false', { include_reasoning: false }, 8000],
    ['a completion limit of 1024', { reasoning: { max_tokens: 1000 } }, 1024],
    ['a completion limit below 1024', { reasoning: { effort: 'high' } }, 500],
  ])('leaves thinking off for %s', (_name, reasoning, maxTokens) => {
    const body = bodyOf({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: maxTokens, ...reasoning });
    expect(body).not.toHaveProperty('thinking');
    expect(body.max_tokens).toBe(maxTokens);
  });

  it('with thinking on, leaves out the sampling parameters and the forced tool choice Anthropic refuses with it', () => {
    const base = {
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 8000,
      temperature: 0.2,
      top_p: 0.5,
      top_k: 10,
      tools: [WEATHER_TOOL],
    };
    const thinking = { ...base, reasoning: { effort: 'medium' } };
    const sent = bodyOf({ ...thinking, tool_choice: 'required' });
    expect(sent).not.toHaveProperty('temperature');
    expect(sent).not.toHaveProperty('top_p');
    expect(sent).not.toHaveProperty('top_k');
    expect(sent.tool_choice).toEqual({ type: 'auto' });
    const named = { type: 'function', function: { name: 'get_weather' } };
    expect(bodyOf({ ...thinking, tool_choice: named }).tool_choice).toEqual({ type: 'auto' });
    expect(bodyOf({ ...thinking, tool_choice: named, parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(bodyOf({ ...thinking, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    // Without thinking, all of them pass as before.
    expect(bodyOf({ ...base, tool_choice: 'required' })).toMatchObject({
      temperature: 0.2,
      top_p: 0.5,
      top_k: 10,
      tool_choice: { type: 'any' },
    });
  });

  it('does not modify the caller body', () => {
    const callerBody = {
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'Hi' },
      ],
      tools: [WEATHER_TOOL],
      stop: 'x',
    };
    const copy = structuredClone(callerBody);
    anthropicAdapter.buildRequest(target, callerBody, true);
    expect(callerBody).toEqual(copy);
  });
});
