import { describe, expect, it } from 'vitest';
import type { EndpointTarget } from '../types.js';
import { openAiAdapter } from './adapter.js';

const target: EndpointTarget = {
  providerId: 'openai',
  baseUrl: 'https://api.openai.com/v1',
  apiKey: 'sk-test-123',
  upstreamModel: 'gpt-4o-mini-2024-07-18',
  extraHeaders: { 'openai-organization': 'org-42' },
};

const callerBody = {
  model: 'openai/gpt-4o-mini',
  messages: [{ role: 'user', content: 'Hi' }],
  max_tokens: 50,
  temperature: 0.2,
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
  models: ['openai/gpt-4o-mini', 'anthropic/claude-3.5-haiku'],
  provider: { order: ['openai'] },
  transforms: ['middle-out'],
  route: 'fallback',
  usage: { include: true },
  plugins: [{ id: 'web' }],
  stream_options: { include_usage: false },
};

// Recorded from api.openai.com (ids shortened).
const COMPLETION = {
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello! How can I help?', refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: {
    prompt_tokens: 9,
    completion_tokens: 7,
    total_tokens: 16,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  },
  service_tier: 'default',
  system_fingerprint: 'fp_06737a9306',
};

const TOOL_CALL_COMPLETION = {
  id: 'chatcmpl-tool',
  object: 'chat.completion',
  created: 1741570283,
  model: 'o3-mini-2025-01-31',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
        refusal: null,
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: {
    prompt_tokens: 2006,
    completion_tokens: 300,
    total_tokens: 2306,
    prompt_tokens_details: { cached_tokens: 1920 },
    completion_tokens_details: { reasoning_tokens: 256 },
  },
  system_fingerprint: null,
};

describe('openAiAdapter.buildRequest', () => {
  it('posts to /chat/completions with auth, extra headers and the upstream model', () => {
    const req = openAiAdapter.buildRequest(target, callerBody, false);
    expect(req.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(req.headers).toMatchObject({
      'content-type': 'application/json',
      // Answers are never decompressed: no encoding but identity is acceptable.
      'accept-encoding': 'identity',
      authorization: 'Bearer sk-test-123',
      'openai-organization': 'org-42',
    });
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body.model).toBe('gpt-4o-mini-2024-07-18');
    expect(body.stream).toBe(false);
  });

  it('removes OpenRouter-only fields and keeps OpenAI parameters', () => {
    const body = JSON.parse(openAiAdapter.buildRequest(target, callerBody, false).body) as Record<string, unknown>;
    for (const field of ['models', 'provider', 'transforms', 'route', 'usage', 'plugins', 'stream_options']) {
      expect(body).not.toHaveProperty(field);
    }
    expect(body).toMatchObject({
      max_tokens: 50,
      temperature: 0.2,
      messages: callerBody.messages,
      tools: callerBody.tools,
    });
  });

  it('asks for usage in the stream', () => {
    const body = JSON.parse(openAiAdapter.buildRequest(target, callerBody, true).body) as Record<string, unknown>;
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
  });

  it('sends no authorization without a key and tolerates a trailing slash in the base url', () => {
    const req = openAiAdapter.buildRequest(
      { ...target, apiKey: null, baseUrl: 'http://localhost:8000/v1/', extraHeaders: {} },
      callerBody,
      true,
    );
    expect(req.url).toBe('http://localhost:8000/v1/chat/completions');
    expect(req.headers).not.toHaveProperty('authorization');
  });

  it('does not modify the caller body', () => {
    const copy = structuredClone(callerBody);
    openAiAdapter.buildRequest(target, callerBody, true);
    expect(callerBody).toEqual(copy);
  });
});

describe('openAiAdapter.parseResponse', () => {
  it('normalizes a plain completion', () => {
    expect(openAiAdapter.parseResponse(COMPLETION)).toEqual({
      upstreamId: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello! How can I help?', refusal: null, annotations: [] },
          finish_reason: 'stop',
          native_finish_reason: 'stop',
        },
      ],
      usage: { promptTokens: 9, completionTokens: 7, reasoningTokens: 0, cachedTokens: 0 },
      systemFingerprint: 'fp_06737a9306',
    });
  });

  it('keeps tool calls, null content and maps reasoning and cached tokens', () => {
    const parsed = openAiAdapter.parseResponse(TOOL_CALL_COMPLETION);
    if ('kind' in parsed) throw new Error(parsed.reason);
    expect(parsed.choices[0]?.message.content).toBeNull();
    expect(parsed.choices[0]?.message.tool_calls).toEqual(TOOL_CALL_COMPLETION.choices[0]?.message.tool_calls);
    expect(parsed.choices[0]?.finish_reason).toBe('tool_calls');
    expect(parsed.usage).toEqual({
      promptTokens: 2006,
      completionTokens: 300,
      reasoningTokens: 256,
      cachedTokens: 1920,
    });
    expect(parsed.systemFingerprint).toBeNull();
  });

  it('reports usage as null when absent and details as null when missing', () => {
    const noUsage = openAiAdapter.parseResponse({ ...COMPLETION, usage: undefined });
    expect('kind' in noUsage ? null : noUsage.usage).toBeNull();
    const bare = openAiAdapter.parseResponse({
      ...COMPLETION,
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
    expect('kind' in bare ? null : bare.usage).toEqual({
      promptTokens: 3,
      completionTokens: 4,
      reasoningTokens: null,
      cachedTokens: null,
    });
  });

  it('maps the legacy function_call finish reason and keeps the native one', () => {
    const legacy = structuredClone(COMPLETION);
    legacy.choices[0]!.finish_reason = 'function_call';
    const parsed = openAiAdapter.parseResponse(legacy);
    expect('kind' in parsed ? null : parsed.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      native_finish_reason: 'function_call',
    });
  });

  it('keeps the choice’s logprobs as the provider sent them, and none when it sent null', () => {
    const logprobs = { content: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    const withLogprobs = structuredClone(COMPLETION) as unknown as { choices: Record<string, unknown>[] };
    withLogprobs.choices[0]!.logprobs = logprobs;
    const parsed = openAiAdapter.parseResponse(withLogprobs);
    expect('kind' in parsed ? null : parsed.choices[0]?.logprobs).toEqual(logprobs);
    const plain = openAiAdapter.parseResponse(COMPLETION);
    expect('kind' in plain ? null : plain.choices[0]).not.toHaveProperty('logprobs');
  });

  it('joins text parts when content is an array', () => {
    const parts = structuredClone(COMPLETION) as unknown as { choices: { message: { content: unknown } }[] };
    parts.choices[0]!.message.content = [
      { type: 'thinking', thinking: [] },
      { type: 'text', text: 'Hi ' },
      { type: 'text', text: 'there' },
    ];
    const parsed = openAiAdapter.parseResponse(parts);
    expect('kind' in parsed ? null : parsed.choices[0]?.message.content).toBe('Hi there');
  });

  it.each([
    ['not an object', 'oops'],
    ['null', null],
    ['no choices', { id: 'x', object: 'chat.completion' }],
    ['empty choices', { ...COMPLETION, choices: [] }],
    ['choice without message', { ...COMPLETION, choices: [{ index: 0, finish_reason: 'stop' }] }],
    ['numeric content', { ...COMPLETION, choices: [{ index: 0, message: { role: 'assistant', content: 42 } }] }],
    ['an error body with status 200', { error: { message: 'Internal error', type: 'server_error' } }],
  ])('rejects %s as malformed', (_name, json) => {
    expect(openAiAdapter.parseResponse(json)).toMatchObject({ kind: 'malformed', reason: expect.any(String) });
  });
});

describe('openAiAdapter.parseStreamEvent', () => {
  const first =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}';
  const last =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}';
  const usageOnly =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06737a9306","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}';

  it('reads [DONE]', () => {
    expect(openAiAdapter.parseStreamEvent('[DONE]', null)).toEqual({ kind: 'done' });
    expect(openAiAdapter.parseStreamEvent(' [DONE]\n', null)).toEqual({ kind: 'done' });
    expect(openAiAdapter.parseStreamEvent(' ', null)).toEqual({ kind: 'keepalive' });
  });

  it('reads the role chunk, content chunks and the finish chunk', () => {
    expect(openAiAdapter.parseStreamEvent(first, null)).toEqual({
      kind: 'chunk',
      upstreamId: 'chatcmpl-1',
      choices: [
        {
          index: 0,
          delta: { role: 'assistant', content: '', refusal: null },
          finish_reason: null,
          native_finish_reason: null,
        },
      ],
      usage: null,
      systemFingerprint: 'fp_06737a9306',
    });
    expect(openAiAdapter.parseStreamEvent(last, null)).toMatchObject({
      kind: 'chunk',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop', native_finish_reason: 'stop' }],
    });
  });

  it('reads a usage-only chunk with empty choices', () => {
    expect(openAiAdapter.parseStreamEvent(usageOnly, null)).toMatchObject({
      kind: 'chunk',
      choices: [],
      usage: { promptTokens: 9, completionTokens: 7, reasoningTokens: 0, cachedTokens: 0 },
    });
  });

  it('reads a usage chunk that omits choices altogether', () => {
    expect(
      openAiAdapter.parseStreamEvent('{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2}}', null),
    ).toMatchObject({
      kind: 'chunk',
      choices: [],
      usage: { promptTokens: 1, completionTokens: 2 },
    });
  });

  it('keeps a chunk’s logprobs as the provider sent them', () => {
    const logprobs = { content: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    const data = `{"id":"c","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":${JSON.stringify(logprobs)},"finish_reason":null}]}`;
    expect(openAiAdapter.parseStreamEvent(data, null)).toMatchObject({ kind: 'chunk', choices: [{ logprobs }] });
    expect(openAiAdapter.parseStreamEvent(first, null)).not.toHaveProperty('choices.0.logprobs');
  });

  it('keeps tool call deltas as they are', () => {
    const data =
      '{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}';
    const event = openAiAdapter.parseStreamEvent(data, null);
    expect(event).toMatchObject({ kind: 'chunk', choices: [{ delta: { tool_calls: [{ id: 'call_1' }] } }] });
  });

  it('reports an in-band error, classified', () => {
    const data =
      '{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}';
    expect(openAiAdapter.parseStreamEvent(data, null)).toEqual({
      kind: 'error',
      failure: {
        type: 'server',
        status: null,
        message: 'The server had an error while processing your request.',
        providerCode: 'server_error',
        retryAfterMs: null,
        raw: JSON.parse(data),
        inStream: true,
      },
    });
  });

  it('uses a numeric in-band error code as the status', () => {
    const data =
      '{"id":"gen-1","error":{"code":429,"message":"Rate limit exceeded"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}';
    expect(openAiAdapter.parseStreamEvent(data, null)).toMatchObject({
      kind: 'error',
      failure: { type: 'rate_limited', status: 429, providerCode: 429 },
    });
  });

  it('ignores an empty event', () => {
    expect(openAiAdapter.parseStreamEvent('', null)).toEqual({ kind: 'keepalive' });
  });

  it.each([
    ['truncated JSON', '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hel'],
    ['a JSON array', '[1,2]'],
    ['a chunk without choices or usage', '{"id":"x","object":"chat.completion.chunk"}'],
    ['choices that are not an array', '{"id":"x","choices":{}}'],
    ['a delta that is a string', '{"id":"x","choices":[{"index":0,"delta":"hi"}]}'],
    ['content that is a number', '{"id":"x","choices":[{"index":0,"delta":{"content":42}}]}'],
    ['content that is an object', '{"id":"x","choices":[{"index":0,"delta":{"content":{"text":" NOT"}}}]}'],
    ['reasoning that is a number', '{"id":"x","choices":[{"index":0,"delta":{"reasoning":7}}]}'],
    ['tool calls that are a string', '{"id":"x","choices":[{"index":0,"delta":{"tool_calls":"NOT"}}]}'],
    [
      'arguments that are an object',
      '{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{}}}]}}]}',
    ],
    ['a finish reason that is a number', '{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":5}]}'],
    ['a choice index that is not a whole number', '{"id":"x","choices":[{"index":-1,"delta":{"content":"a"}}]}'],
  ])('rejects %s as malformed', (_name, data) => {
    expect(openAiAdapter.parseStreamEvent(data, null)).toMatchObject({ kind: 'malformed' });
  });
});
