/**
 * Anthropic errors → UpstreamFailure. The body is `{type: 'error', error: {type, message}}`; the
 * status and `error.type` agree (429 rate_limit_error, 529 overloaded_error...), and in a stream,
 * where the status was already 200, the type alone tells what happened.
 */
import { classifyHttpError, type ResponseHeaders } from '../http-error.js';
import { isRecord, stringOrNull } from '../json-shape.js';
import type { FailureType, UpstreamFailure } from '../types.js';

interface ErrorDetail {
  type: string | null;
  message: string | null;
}

export function classifyAnthropicHttpError(
  status: number,
  headers: ResponseHeaders,
  bodyText: string,
  nowMs: number,
): UpstreamFailure {
  // 529 overloaded_error is Anthropic-wide capacity, not our quota: another endpoint may serve (5xx → server).
  return classifyHttpError(status, headers, bodyText, nowMs, (raw) => {
    const detail = readErrorDetail(raw);
    return { message: detail.message, providerCode: detail.type, type: null, clientErrorType: clientErrorType(detail) };
  });
}

/** An `error` event inside a stream (e.g. `overloaded_error` after the 200 was sent). */
export function classifyAnthropicStreamError(payload: Record<string, unknown>): UpstreamFailure {
  const detail = readErrorDetail(payload);
  return {
    type: failureTypeWithoutStatus(detail),
    status: null,
    message: detail.message ?? 'upstream reported an error in the stream',
    providerCode: detail.type,
    retryAfterMs: null,
    raw: payload,
  };
}

/** A 4xx that says more than its status. */
function clientErrorType(detail: ErrorDetail): FailureType | null {
  if (isContextLength(detail)) return 'context_length_exceeded';
  if (isOutOfCredit(detail)) return 'auth';
  return null;
}

const TYPE_FAILURES: Readonly<Record<string, FailureType>> = {
  rate_limit_error: 'rate_limited',
  overloaded_error: 'server',
  api_error: 'server',
  timeout_error: 'timeout',
  authentication_error: 'auth',
  permission_error: 'auth',
  billing_error: 'auth',
  invalid_request_error: 'bad_request',
  not_found_error: 'not_found',
  request_too_large: 'bad_request',
};

function failureTypeWithoutStatus(detail: ErrorDetail): FailureType {
  if (isContextLength(detail)) return 'context_length_exceeded';
  if (isOutOfCredit(detail)) return 'auth';
  // An unknown error mid-generation is most likely transient on Anthropic's side.
  return (detail.type === null ? undefined : TYPE_FAILURES[detail.type]) ?? 'server';
}

// "prompt is too long: 208310 tokens > 200000 maximum"; "input length and `max_tokens` exceed context limit: ..."
const CONTEXT_LENGTH_MESSAGE = /prompt is too long|exceed context limit|context window|context length/i;

function isContextLength(detail: ErrorDetail): boolean {
  return detail.message !== null && CONTEXT_LENGTH_MESSAGE.test(detail.message);
}

/** "Your credit balance is too low to access the Anthropic API" comes as a 400: our account, not the caller. */
function isOutOfCredit(detail: ErrorDetail): boolean {
  return detail.message !== null && /credit balance is too low/i.test(detail.message);
}

function readErrorDetail(raw: unknown): ErrorDetail {
  if (!isRecord(raw)) return { type: null, message: null };
  const error = isRecord(raw.error) ? raw.error : raw;
  return { type: stringOrNull(error.type), message: stringOrNull(error.message) };
}
