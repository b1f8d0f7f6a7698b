/**
 * Turns an OpenAI-style error (HTTP status + body, or an error object inside a stream) into an
 * UpstreamFailure, so routing decides failover from data. OpenAI-compatible providers vary in the
 * body's shape, so the reader accepts the common variants (see readErrorDetail).
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import type { FailureType, UpstreamFailure } from '../types.js';

type Headers = Record<string, string | string[] | undefined>;

/** The fields of an upstream error we classify on. */
interface ErrorDetail {
  message: string | null;
  code: string | number | null;
  type: string | null;
  flagged: boolean;
}

export function classifyOpenAiHttpError(
  status: number,
  headers: Headers,
  bodyText: string,
  nowMs: number,
): UpstreamFailure {
  const raw = parseJsonOrText(bodyText);
  const detail = readErrorDetail(raw);
  return {
    type: failureTypeForStatus(status, detail),
    status,
    message: detail.message ?? `HTTP ${status}`,
    providerCode: detail.code ?? detail.type,
    retryAfterMs: parseRetryAfterMs(headers, nowMs),
    raw,
  };
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
    type: embeddedStatus === null ? failureTypeWithoutStatus(detail) : failureTypeForStatus(embeddedStatus, detail),
    status: embeddedStatus,
    message: detail.message ?? 'upstream reported an error in the stream',
    providerCode: detail.code ?? detail.type,
    retryAfterMs: null,
    raw: payload,
  };
}

function failureTypeForStatus(status: number, detail: ErrorDetail): FailureType {
  if (status === 429) return 'rate_limited';
  if (status === 408 || status === 504) return 'timeout';
  if (status >= 500 && status <= 599) return 'server';
  if (status >= 400 && status <= 499) {
    // Checked before the status mapping: providers send these as 400, 403 (moderation) or 413.
    if (isContextLength(detail)) return 'context_length_exceeded';
    if (isContentPolicy(detail)) return 'content_policy';
    // 402: our provider account cannot pay; like a rejected key, another endpoint may still succeed.
    if (status === 401 || status === 402 || status === 403) return 'auth';
    return 'bad_request';
  }
  return 'invalid_response'; // an "error" with a 1xx/2xx/3xx status is not OpenAI behaviour
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

const CONTEXT_LENGTH_MESSAGE =
  /maximum context length|context[ _]length|context window|prompt is too long|input is too long/i;
const CONTENT_POLICY_CODES = new Set(['content_policy_violation', 'content_filter', 'content_policy']);
const CONTENT_POLICY_MESSAGE = /content (management )?polic|content filter|safety system|flagged/i;

function isContextLength(detail: ErrorDetail): boolean {
  if (detail.code === 'context_length_exceeded' || detail.type === 'context_length_exceeded') return true;
  return detail.message !== null && CONTEXT_LENGTH_MESSAGE.test(detail.message);
}

function isContentPolicy(detail: ErrorDetail): boolean {
  if (detail.flagged) return true;
  if (typeof detail.code === 'string' && CONTENT_POLICY_CODES.has(detail.code)) return true;
  if (detail.type !== null && CONTENT_POLICY_CODES.has(detail.type)) return true;
  return detail.message !== null && CONTENT_POLICY_MESSAGE.test(detail.message);
}

function parseJsonOrText(bodyText: string): unknown {
  try {
    return JSON.parse(bodyText) as unknown;
  } catch {
    return bodyText;
  }
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

/** `retry-after-ms` (OpenAI, more precise) wins over `retry-after` (seconds or an HTTP date). */
export function parseRetryAfterMs(headers: Headers, nowMs: number): number | null {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const value = headerValue(headers, 'retry-after');
  if (value === null) return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  // An HTTP date names a month; Date.parse alone would also take "-5" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

function headerValue(headers: Headers, name: string): string | null {
  let value = headers[name];
  if (value === undefined) {
    // Node and undici lower-case header names; a hand-built record may not.
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : headers[key];
  }
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? null : first;
}
