import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { FailureType } from '../types.js';
import { geminiAdapter } from './adapter.js';
import { classifyGeminiHttpError, classifyGeminiStreamError } from './classify-error.js';

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
  return classifyGeminiHttpError(recorded.status, recorded.headers ?? {}, JSON.stringify(recorded.body), NOW);
}

describe('classifyGeminiHttpError', () => {
  it.each<[string, FailureType, string]>([
    ['invalid_argument', 'bad_request', 'INVALID_ARGUMENT'],
    ['api_key_invalid', 'auth', 'INVALID_ARGUMENT'], // Google answers a bad key with 400
    ['context_length', 'context_length_exceeded', 'INVALID_ARGUMENT'],
    ['location', 'auth', 'FAILED_PRECONDITION'], // our account's region: another endpoint may serve
    ['safety', 'content_policy', 'INVALID_ARGUMENT'],
    ['permission_denied', 'auth', 'PERMISSION_DENIED'],
    ['not_found', 'not_found', 'NOT_FOUND'],
    ['rate_limit', 'rate_limited', 'RESOURCE_EXHAUSTED'],
    ['internal', 'server', 'INTERNAL'],
    ['unavailable', 'server', 'UNAVAILABLE'],
    ['deadline', 'timeout', 'DEADLINE_EXCEEDED'],
  ])('classifies %s as %s', (name, type, providerCode) => {
    const failure = classify(name);
    expect(failure.type).toBe(type);
    expect(failure.providerCode).toBe(providerCode);
    expect(failure.status).toBe(ERRORS[name]?.status);
    expect(failure.raw).toEqual(ERRORS[name]?.body);
  });

  it('a request field named "safety…" in a validation message is a bad request, not a content refusal', () => {
    const body = (message: string) => JSON.stringify({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } });
    expect(
      classifyGeminiHttpError(
        400,
        {},
        body(
          `Invalid value at 'safety_settings[0].threshold' (type.googleapis.com/google.ai.generativelanguage.v1beta.HarmBlockThreshold), "BLOCK_EVERYTHING"`,
        ),
        NOW,
      ).type,
    ).toBe('bad_request');
    expect(classifyGeminiHttpError(400, {}, body('Unknown name "blocked" at \'generation_config\''), NOW).type).toBe(
      'bad_request',
    );
  });

  it('reads the retry delay from RetryInfo, a header winning over it', () => {
    expect(classify('rate_limit').retryAfterMs).toBe(38_000);
    const body = JSON.stringify(ERRORS.rate_limit?.body);
    expect(classifyGeminiHttpError(429, { 'retry-after': '5' }, body, NOW).retryAfterMs).toBe(5000);
    expect(classify('unavailable').retryAfterMs).toBeNull();
  });

  it('reads an error wrapped in an array and a body that is not JSON', () => {
    const wrapped = JSON.stringify([ERRORS.unavailable?.body]);
    expect(classifyGeminiHttpError(503, {}, wrapped, NOW)).toMatchObject({
      type: 'server',
      providerCode: 'UNAVAILABLE',
      message: 'The model is overloaded. Please try again later.',
    });
    expect(classifyGeminiHttpError(502, {}, '<html>502</html>', NOW)).toEqual({
      type: 'server',
      status: 502,
      message: 'HTTP 502',
      providerCode: null,
      retryAfterMs: null,
      raw: '<html>502</html>',
    });
    expect(classifyGeminiHttpError(401, {}, '', NOW).type).toBe('auth');
  });

  it('is what the adapter uses', () => {
    expect(geminiAdapter.classifyError(429, {}, JSON.stringify(ERRORS.rate_limit?.body))).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: 38_000,
    });
  });
});

describe('classifyGeminiStreamError', () => {
  it.each<[number, string, FailureType]>([
    [429, 'RESOURCE_EXHAUSTED', 'rate_limited'],
    [500, 'INTERNAL', 'server'],
    [503, 'UNAVAILABLE', 'server'],
    [504, 'DEADLINE_EXCEEDED', 'timeout'],
    [400, 'INVALID_ARGUMENT', 'bad_request'],
  ])('classifies an in-band %i %s as %s', (code, status, type) => {
    expect(classifyGeminiStreamError({ error: { code, message: 'm', status } })).toMatchObject({
      type,
      status: code,
      providerCode: status,
      message: 'm',
    });
  });

  it('falls back to the status name, then to a transient failure', () => {
    expect(classifyGeminiStreamError({ error: { message: 'm', status: 'RESOURCE_EXHAUSTED' } })).toMatchObject({
      type: 'rate_limited',
      status: null,
    });
    expect(classifyGeminiStreamError({ error: { message: 'm' } })).toMatchObject({
      type: 'server',
      status: null,
      providerCode: null,
    });
  });
});
