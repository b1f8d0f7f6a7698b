import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { FailureType } from '../types.js';
import { anthropicAdapter } from './adapter.js';
import { classifyAnthropicHttpError, classifyAnthropicStreamError } from './classify-error.js';

interface RecordedError {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

const ERRORS = JSON.parse(readFileSync(new URL('./fixtures/errors.json', import.meta.url), 'utf8')) as Record<
  string,
  RecordedError
>;
const NOW = Date.parse('2026-03-01T12:00:00Z');

function classify(name: string) {
  const recorded = ERRORS[name];
  if (recorded === undefined) throw new Error(`no fixture ${name}`);
  return classifyAnthropicHttpError(recorded.status, recorded.headers ?? {}, JSON.stringify(recorded.body), NOW);
}

describe('classifyAnthropicHttpError', () => {
  it.each<[string, FailureType, string]>([
    ['invalid_request', 'bad_request', 'invalid_request_error'],
    ['prompt_too_long', 'context_length_exceeded', 'invalid_request_error'],
    ['context_limit', 'context_length_exceeded', 'invalid_request_error'],
    ['credit_balance', 'auth', 'invalid_request_error'], // our account cannot pay: another endpoint may serve
    ['authentication', 'auth', 'authentication_error'],
    ['permission', 'auth', 'permission_error'],
    ['not_found', 'not_found', 'not_found_error'],
    ['request_too_large', 'bad_request', 'request_too_large'],
    ['rate_limit', 'rate_limited', 'rate_limit_error'],
    ['api_error', 'server', 'api_error'],
    ['timeout', 'timeout', 'timeout_error'],
    ['overloaded', 'server', 'overloaded_error'], // Anthropic-wide capacity, not our quota
  ])('classifies %s as %s', (name, type, providerCode) => {
    const failure = classify(name);
    expect(failure.type).toBe(type);
    expect(failure.providerCode).toBe(providerCode);
    expect(failure.status).toBe(ERRORS[name]?.status);
    expect(failure.raw).toEqual(ERRORS[name]?.body);
  });

  it('keeps the message and the retry-after hint', () => {
    expect(classify('prompt_too_long').message).toBe('prompt is too long: 208310 tokens > 200000 maximum');
    expect(classify('rate_limit').retryAfterMs).toBe(17_000);
    expect(classify('overloaded').retryAfterMs).toBeNull();
    const hinted = classifyAnthropicHttpError(
      529,
      { 'retry-after': '3' },
      JSON.stringify(ERRORS.overloaded?.body),
      NOW,
    );
    expect(hinted).toMatchObject({ type: 'server', retryAfterMs: 3000 });
  });

  it('copes with a body that is not Anthropic JSON', () => {
    expect(classifyAnthropicHttpError(502, {}, '<html>Bad Gateway</html>', NOW)).toEqual({
      type: 'server',
      status: 502,
      message: 'HTTP 502',
      providerCode: null,
      retryAfterMs: null,
      raw: '<html>Bad Gateway</html>',
    });
    expect(classifyAnthropicHttpError(400, {}, '', NOW)).toMatchObject({ type: 'bad_request', message: 'HTTP 400' });
  });

  it('is what the adapter uses', () => {
    expect(
      anthropicAdapter.classifyError(429, { 'retry-after': '1' }, JSON.stringify(ERRORS.rate_limit?.body)),
    ).toMatchObject({ type: 'rate_limited', retryAfterMs: 1000 });
  });
});

describe('classifyAnthropicStreamError', () => {
  it.each<[string, FailureType]>([
    ['overloaded_error', 'server'],
    ['api_error', 'server'],
    ['rate_limit_error', 'rate_limited'],
    ['timeout_error', 'timeout'],
    ['authentication_error', 'auth'],
    ['permission_error', 'auth'],
    ['invalid_request_error', 'bad_request'],
    ['not_found_error', 'not_found'],
    ['something_new', 'server'],
  ])('classifies an in-band %s as %s', (type, expected) => {
    const failure = classifyAnthropicStreamError({ type: 'error', error: { type, message: 'x' } });
    expect(failure).toMatchObject({ type: expected, status: null, providerCode: type, message: 'x' });
  });

  it('recognizes a context overflow reported in the stream', () => {
    expect(
      classifyAnthropicStreamError({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 1 tokens > 0 maximum' },
      }).type,
    ).toBe('context_length_exceeded');
  });
});
