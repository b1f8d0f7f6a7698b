import { describe, expect, it } from 'vitest';
import { openAiAdapter } from './adapter.js';
import { classifyOpenAiHttpError, parseRetryAfterMs } from './classify-error.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

// Bodies as returned by api.openai.com unless noted.
const RATE_LIMIT = JSON.stringify({
  error: {
    message:
      'Rate limit reached for gpt-4o-mini in organization org-42 on tokens per min (TPM): Limit 200000, Used 199800, Requested 512. Please try again in 93ms.',
    type: 'tokens',
    param: null,
    code: 'rate_limit_exceeded',
  },
});
const INSUFFICIENT_QUOTA = JSON.stringify({
  error: {
    message: 'You exceeded your current quota, please check your plan and billing details.',
    type: 'insufficient_quota',
    param: null,
    code: 'insufficient_quota',
  },
});
const INVALID_KEY = JSON.stringify({
  error: {
    message:
      'Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_api_key',
  },
});
const CONTEXT_LENGTH = JSON.stringify({
  error: {
    message:
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130015 tokens. Please reduce the length of the messages.",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
});
const CONTEXT_LENGTH_NO_CODE = JSON.stringify({
  object: 'error',
  message:
    "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion).",
  type: 'BadRequestError',
  param: null,
  code: 400,
}); // vLLM
const CONTENT_POLICY = JSON.stringify({
  error: {
    message:
      'Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.',
    type: 'invalid_request_error',
    param: null,
    code: 'content_policy_violation',
  },
});
const AZURE_CONTENT_FILTER = JSON.stringify({
  error: {
    message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: {
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: { hate: { filtered: true, severity: 'high' } },
    },
  },
});
const MODERATION_FLAGGED = JSON.stringify({
  error: {
    code: 403,
    message: 'openai/gpt-4o requires moderation on OpenAI. Your input was flagged for "harassment".',
    metadata: {
      reasons: ['harassment'],
      flagged_input: 'you...',
      provider_name: 'OpenAI',
      model_slug: 'openai/gpt-4o',
    },
  },
}); // OpenRouter used as an upstream
const BAD_PARAM = JSON.stringify({
  error: {
    message: "Invalid type for 'temperature': expected a decimal, but got a string instead.",
    type: 'invalid_request_error',
    param: 'temperature',
    code: 'invalid_type',
  },
});
const MODEL_NOT_FOUND = JSON.stringify({
  error: {
    message: 'The model `gpt-5-turbo` does not exist or you do not have access to it.',
    type: 'invalid_request_error',
    param: null,
    code: 'model_not_found',
  },
});
const SERVER_ERROR = JSON.stringify({
  error: {
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
    param: null,
    code: null,
  },
});
const GEMINI_ARRAY = JSON.stringify([
  { error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } },
]);
const FASTAPI_DETAIL = JSON.stringify({ detail: 'Not Found' });

function classify(status: number, body: string, headers: Record<string, string | string[] | undefined> = {}) {
  return classifyOpenAiHttpError(status, headers, body, NOW);
}

describe('classifyOpenAiHttpError', () => {
  it('classifies 429 with its code, message and retry hint', () => {
    expect(classify(429, RATE_LIMIT, { 'retry-after': '1', 'retry-after-ms': '93' })).toEqual({
      type: 'rate_limited',
      status: 429,
      message: expect.stringContaining('Rate limit reached for gpt-4o-mini') as string,
      providerCode: 'rate_limit_exceeded',
      retryAfterMs: 93,
      raw: JSON.parse(RATE_LIMIT),
    });
  });

  it('classifies an exhausted quota as rate limited with its code', () => {
    expect(classify(429, INSUFFICIENT_QUOTA)).toMatchObject({
      type: 'rate_limited',
      providerCode: 'insufficient_quota',
      retryAfterMs: null,
    });
  });

  it.each([
    [408, 'timeout'],
    [504, 'timeout'],
    [500, 'server'],
    [502, 'server'],
    [503, 'server'],
    [529, 'server'],
    [401, 'auth'],
    [403, 'auth'],
    [402, 'auth'],
    [400, 'bad_request'],
    [404, 'not_found'],
    [422, 'bad_request'],
    [413, 'bad_request'],
    [302, 'invalid_response'],
  ] as const)('maps status %i to %s', (status, type) => {
    expect(classify(status, '').type).toBe(type);
  });

  it('falls back to "HTTP <status>" for a body without a message, keeping the raw text', () => {
    expect(classify(502, '<html><body>Bad gateway</body></html>')).toMatchObject({
      message: 'HTTP 502',
      providerCode: null,
      raw: '<html><body>Bad gateway</body></html>',
    });
  });

  it('reads the message and code of an invalid key', () => {
    expect(classify(401, INVALID_KEY)).toMatchObject({
      type: 'auth',
      providerCode: 'invalid_api_key',
      message: expect.stringContaining('Incorrect API key') as string,
    });
  });

  it('recognises context length by code and by message', () => {
    expect(classify(400, CONTEXT_LENGTH)).toMatchObject({
      type: 'context_length_exceeded',
      providerCode: 'context_length_exceeded',
    });
    expect(classify(400, CONTEXT_LENGTH_NO_CODE)).toMatchObject({ type: 'context_length_exceeded', providerCode: 400 });
  });

  it.each([
    [
      'vLLM',
      400,
      {
        object: 'error',
        message:
          'The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.',
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    ],
    [
      'llama.cpp server',
      400,
      {
        error: {
          code: 400,
          message: 'the request exceeds the available context size, try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 5000,
          n_ctx: 4096,
        },
      },
    ],
    [
      'TGI',
      422,
      {
        error:
          'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 21 `inputs` tokens and 5000 `max_new_tokens`',
        error_type: 'validation',
      },
    ],
  ])("recognises %s's context overflow (the models fallback moves on)", (_server, status, body) => {
    expect(classify(status, JSON.stringify(body))).toMatchObject({ type: 'context_length_exceeded' });
  });

  it('recognises content policy rejections by code, Azure content filter and moderation flags', () => {
    expect(classify(400, CONTENT_POLICY)).toMatchObject({
      type: 'content_policy',
      providerCode: 'content_policy_violation',
    });
    expect(classify(400, AZURE_CONTENT_FILTER)).toMatchObject({
      type: 'content_policy',
      providerCode: 'content_filter',
    });
    expect(classify(403, MODERATION_FLAGGED)).toMatchObject({ type: 'content_policy', providerCode: 403 });
  });

  it('keeps other 4xx as the caller own fault', () => {
    expect(classify(400, BAD_PARAM)).toMatchObject({ type: 'bad_request', providerCode: 'invalid_type' });
  });

  it('reads a 404 as a model the endpoint does not serve (the caller names our model, never the provider’s)', () => {
    expect(classify(404, MODEL_NOT_FOUND)).toMatchObject({ type: 'not_found', providerCode: 'model_not_found' });
  });

  it('uses the error type when the code is null', () => {
    expect(classify(500, SERVER_ERROR)).toMatchObject({ type: 'server', providerCode: 'server_error' });
  });

  it('reads other compatible servers error shapes', () => {
    expect(classify(429, GEMINI_ARRAY)).toMatchObject({
      type: 'rate_limited',
      providerCode: 429,
      message: 'Resource has been exhausted (e.g. check quota).',
    });
    expect(classify(404, FASTAPI_DETAIL)).toMatchObject({ type: 'not_found', message: 'Not Found' });
    expect(classify(500, JSON.stringify({ error: 'upstream exploded' }))).toMatchObject({
      message: 'upstream exploded',
    });
  });

  it('is what the adapter uses', () => {
    expect(openAiAdapter.classifyError(429, { 'retry-after': '2' }, RATE_LIMIT)).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: 2000,
    });
  });
});

describe('parseRetryAfterMs', () => {
  it('reads seconds, fractional seconds and milliseconds', () => {
    expect(parseRetryAfterMs({ 'retry-after': '2' }, NOW)).toBe(2000);
    expect(parseRetryAfterMs({ 'retry-after': '0.5' }, NOW)).toBe(500);
    expect(parseRetryAfterMs({ 'retry-after-ms': '1234.5' }, NOW)).toBe(1235);
  });

  it('prefers retry-after-ms and falls back to retry-after when it is unreadable', () => {
    expect(parseRetryAfterMs({ 'retry-after': '20', 'retry-after-ms': '19500' }, NOW)).toBe(19500);
    expect(parseRetryAfterMs({ 'retry-after': '20', 'retry-after-ms': 'soon' }, NOW)).toBe(20000);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfterMs({ 'retry-after': 'Sun, 01 Mar 2026 12:00:30 GMT' }, NOW)).toBe(30000);
    expect(parseRetryAfterMs({ 'retry-after': 'Sun, 01 Mar 2026 11:00:00 GMT' }, NOW)).toBe(0);
  });

  it('accepts array values and any header case, and ignores garbage', () => {
    expect(parseRetryAfterMs({ 'Retry-After': ['3', '4'] }, NOW)).toBe(3000);
    expect(parseRetryAfterMs({ 'retry-after': 'later' }, NOW)).toBeNull();
    expect(parseRetryAfterMs({ 'retry-after': '-5' }, NOW)).toBeNull();
    expect(parseRetryAfterMs({}, NOW)).toBeNull();
  });

  it('takes a wait past one day as one day, and an unreadable size (Infinity) as none', () => {
    const DAY = 24 * 60 * 60 * 1000;
    expect(parseRetryAfterMs({ 'retry-after': '99999999999' }, NOW)).toBe(DAY);
    expect(parseRetryAfterMs({ 'retry-after': '9'.repeat(400) }, NOW)).toBeNull();
    expect(parseRetryAfterMs({ 'retry-after-ms': '9'.repeat(400) }, NOW)).toBeNull();
    expect(parseRetryAfterMs({ 'retry-after': 'Fri, 01 Mar 2126 12:00:00 GMT' }, NOW)).toBe(DAY);
    expect(
      classifyOpenAiHttpError(429, { 'retry-after': '9'.repeat(400) }, '{"error":{"message":"slow down"}}', NOW)
        .retryAfterMs,
    ).toBeNull();
  });
});
