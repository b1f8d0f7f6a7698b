/**
 * Turns an OpenAI-style error (HTTP status + body, or an error object inside a stream) into an
 * UpstreamFailure, so routing decides failover from data. OpenAI-compatible providers vary in the
 * body's shape, so the reader accepts the common variants (see readErrorDetail).
 */
import { classifyHttpError, failureTypeForStatus, type ResponseHeaders } from '../http-error.js';
import { isRecord, stringOrNull } from '../json-shape.js';
import type { FailureType, UpstreamFailure } from '../types.js';

export { parseRetryAfterMs } from '../http-error.js';

/** The fields of an upstream error we classify on. */
interface ErrorDetail {
  message: string | null;
  code: string | number | null;
  type: string | null;
  flagged: boolean;
}

export function classifyOpenAiHttpError(
  status: number,
  headers: ResponseHeaders,
  bodyText: string,
  nowMs: number,
): UpstreamFailure {
  return classifyHttpError(status, headers, bodyText, nowMs, (raw) => {
    const detail = readErrorDetail(raw);
    return {
      message: detail.message,
      providerCode: detail.code ?? detail.type,
      type: null,
      clientErrorType: clientErrorType(detail),
    };
  });
}

/**
 * An `{ error: ... }` payload received as a stream event. There is no HTTP status (the stream already
 * answered 200); a numeric code in the 4xx/5xx range, as OpenRouter-style upstreams send, stands in.
 */
export function classifyOpenAiStreamError(payload: Record<string, unknown>): UpstreamFailure {
  const detail = readErrorDetail(payload);
  const embeddedStatus =
    typeof detail.code === 'number' && detail.code >= 400 && detail.code <= 599 ? detail.code : null;
  return {
    type:
      embeddedStatus === null
        ? failureTypeWithoutStatus(detail)
        : failureTypeForStatus(embeddedStatus, clientErrorType(detail)),
    status: embeddedStatus,
    message: detail.message ?? 'upstream reported an error in the stream',
    providerCode: detail.code ?? detail.type,
    retryAfterMs: null,
    raw: payload,
    inStream: true,
  };
}

/** A 4xx that says more than its status: providers send these as 400, 403 (moderation) or 413. */
function clientErrorType(detail: ErrorDetail): FailureType | null {
  if (isContextLength(detail)) return 'context_length_exceeded';
  if (isContentPolicy(detail)) return 'content_policy';
  return null;
}

const RATE_LIMIT_CODES = new Set([
  'rate_limit_exceeded',
  'rate_limit_error',
  'insufficient_quota',
  'requests',
  'tokens',
]);
const AUTH_CODES = new Set(['invalid_api_key', 'authentication_error', 'permission_error', 'permission_denied']);
const BAD_REQUEST_CODES = new Set(['invalid_request_error', 'invalid_value', 'invalid_type']);

function failureTypeWithoutStatus(detail: ErrorDetail): FailureType {
  if (isContextLength(detail)) return 'context_length_exceeded';
  if (isContentPolicy(detail)) return 'content_policy';
  const names = [detail.code, detail.type].filter((v): v is string => typeof v === 'string');
  if (names.some((n) => RATE_LIMIT_CODES.has(n))) return 'rate_limited';
  if (names.some((n) => AUTH_CODES.has(n))) return 'auth';
  if (names.some((n) => BAD_REQUEST_CODES.has(n))) return 'bad_request';
  if (names.some((n) => /timeout|timed_out/i.test(n))) return 'timeout';
  // A provider that dies mid-generation is usually overloaded: let routing treat it as transient.
  return 'server';
}

/**
 * A prompt (with its completion budget) past the model's context, as OpenAI-compatible servers word
 * it: OpenAI's own, vLLM's "longer than the maximum model length", llama.cpp's "exceeds the available
 * context size", TGI's "`inputs` tokens + `max_new_tokens` must be <= N".
 */
const CONTEXT_LENGTH_MESSAGE =
  /maximum context length|context[ _]length|context window|context size|maximum model length|prompt is too long|input is too long|tokens \+ `?max_new_tokens`? must be <=/i;
const CONTEXT_LENGTH_CODES = new Set(['context_length_exceeded', 'exceed_context_size_error']);
const CONTENT_POLICY_CODES = new Set(['content_policy_violation', 'content_filter', 'content_policy']);
const CONTENT_POLICY_MESSAGE = /content (management )?polic|content filter|safety system|flagged/i;

function isContextLength(detail: ErrorDetail): boolean {
  if (
    (typeof detail.code === 'string' && CONTEXT_LENGTH_CODES.has(detail.code)) ||
    (typeof detail.type === 'string' && CONTEXT_LENGTH_CODES.has(detail.type))
  )
    return true;
  return detail.message !== null && CONTEXT_LENGTH_MESSAGE.test(detail.message);
}

function isContentPolicy(detail: ErrorDetail): boolean {
  if (detail.flagged) return true;
  if (typeof detail.code === 'string' && CONTENT_POLICY_CODES.has(detail.code)) return true;
  if (detail.type !== null && CONTENT_POLICY_CODES.has(detail.type)) return true;
  return detail.message !== null && CONTENT_POLICY_MESSAGE.test(detail.message);
}

/**
 * Accepts `{error: {message, code, type}}` (OpenAI), `{error: "text"}`, `[{error: {...}}]` (Gemini's
 * OpenAI endpoint), `{message, code}` and `{detail: "text"}` (FastAPI-based servers such as vLLM).
 */
function readErrorDetail(raw: unknown): ErrorDetail {
  const body = Array.isArray(raw) ? (raw[0] as unknown) : raw;
  const empty: ErrorDetail = { message: null, code: null, type: null, flagged: false };
  if (!isRecord(body)) return empty;
  if (typeof body.error === 'string') return { ...empty, message: body.error };
  const error = isRecord(body.error) ? body.error : body;
  const code = error.code;
  const metadata = isRecord(error.metadata) ? error.metadata : null;
  return {
    message: stringOrNull(error.message) ?? stringOrNull(body.detail),
    code: typeof code === 'string' || (typeof code === 'number' && Number.isFinite(code)) ? code : null,
    type: stringOrNull(error.type),
    flagged: error.flagged === true || metadata?.flagged_input !== undefined,
  };
}
