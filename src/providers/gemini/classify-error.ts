/**
 * Gemini errors → UpstreamFailure. The body is Google's `{error: {code, message, status, details}}`
 * (an array of one such object from some endpoints); `status` is the gRPC-style name
 * (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, UNAVAILABLE...). A 429 may say when to retry in a
 * `google.rpc.RetryInfo` detail rather than a header.
 */
import { classifyHttpError, failureTypeForStatus, type ResponseHeaders } from '../http-error.js';
import { isRecord, stringOrNull } from '../json-shape.js';
import type { FailureType, UpstreamFailure } from '../types.js';

interface ErrorDetail {
  code: number | null;
  status: string | null;
  message: string | null;
  /** `google.rpc.ErrorInfo` reasons, e.g. API_KEY_INVALID. */
  reasons: string[];
  retryDelayMs: number | null;
}

export function classifyGeminiHttpError(
  status: number,
  headers: ResponseHeaders,
  bodyText: string,
  nowMs: number,
): UpstreamFailure {
  return classifyHttpError(status, headers, bodyText, nowMs, (raw) => {
    const detail = readErrorDetail(raw);
    return {
      message: detail.message,
      providerCode: detail.status ?? detail.code,
      type: bodyType(detail),
      clientErrorType: status === 401 || status === 403 ? null : clientErrorType(detail),
      retryAfterMs: detail.retryDelayMs,
    };
  });
}

/** An `{error}` event inside a stream; its `code` stands in for the HTTP status. */
export function classifyGeminiStreamError(payload: Record<string, unknown>): UpstreamFailure {
  const detail = readErrorDetail(payload);
  const status = detail.code !== null && detail.code >= 400 && detail.code <= 599 ? detail.code : null;
  return {
    type: failureType(status, detail),
    status,
    message: detail.message ?? 'upstream reported an error in the stream',
    providerCode: detail.status ?? detail.code,
    retryAfterMs: detail.retryDelayMs,
    raw: payload,
    inStream: true,
  };
}

const STATUS_FAILURES: Readonly<Record<string, FailureType>> = {
  RESOURCE_EXHAUSTED: 'rate_limited',
  UNAVAILABLE: 'server',
  INTERNAL: 'server',
  UNKNOWN: 'server',
  DEADLINE_EXCEEDED: 'timeout',
  UNAUTHENTICATED: 'auth',
  PERMISSION_DENIED: 'auth',
  // "User location is not supported", "free tier not available in your country": our account's limits.
  FAILED_PRECONDITION: 'auth',
  INVALID_ARGUMENT: 'bad_request',
  NOT_FOUND: 'not_found',
};

/** What the body says whatever the status: a bad key (a 400 INVALID_ARGUMENT at Google: not the caller's fault), a context-length error. */
function bodyType(detail: ErrorDetail): FailureType | null {
  if (
    detail.reasons.includes('API_KEY_INVALID') ||
    (detail.message !== null && /API key not valid|API key expired/i.test(detail.message))
  )
    return 'auth';
  if (detail.message !== null && CONTEXT_LENGTH_MESSAGE.test(detail.message)) return 'context_length_exceeded';
  return null;
}

/** A 4xx (or a stream error without a status) by its gRPC status name and message; null: nothing specific. */
function clientErrorType(detail: ErrorDetail): FailureType | null {
  const byStatus = detail.status === null ? undefined : STATUS_FAILURES[detail.status];
  if (byStatus !== undefined && byStatus !== 'bad_request') return byStatus;
  if (detail.message !== null && refusedForContent(detail.message)) return 'content_policy';
  return byStatus ?? null;
}

function failureType(status: number | null, detail: ErrorDetail): FailureType {
  const early = bodyType(detail);
  if (early !== null) return early;
  if (status !== null)
    return failureTypeForStatus(status, status === 401 || status === 403 ? null : clientErrorType(detail));
  // No status: the name says what it can; an unknown error mid-stream is most likely transient.
  return clientErrorType(detail) ?? 'server';
}

// "The input token count (1131246) exceeds the maximum number of tokens allowed (1048576)."
const CONTEXT_LENGTH_MESSAGE =
  /input token count.*exceeds|exceeds the maximum number of tokens|context (window|length)/i;
const CONTENT_POLICY_MESSAGE = /safety|prohibited content|blocked/i;
// A field of the request named in a validation message: "Invalid value at 'safety_settings[0].threshold'".
const FIELD_MESSAGE = /invalid value at|invalid json payload|unknown name|safety_?settings|safetySetting/i;

/** A refusal of the content, not of a request field whose name happens to say "safety" or "blocked". */
function refusedForContent(message: string): boolean {
  return CONTENT_POLICY_MESSAGE.test(message) && !FIELD_MESSAGE.test(message);
}

function readErrorDetail(raw: unknown): ErrorDetail {
  const body = Array.isArray(raw) ? (raw[0] as unknown) : raw;
  const detail: ErrorDetail = { code: null, status: null, message: null, reasons: [], retryDelayMs: null };
  if (!isRecord(body) || !isRecord(body.error)) return detail;
  const error = body.error;
  detail.code = typeof error.code === 'number' ? error.code : null;
  detail.status = stringOrNull(error.status);
  detail.message = stringOrNull(error.message);
  for (const item of Array.isArray(error.details) ? error.details : []) {
    if (!isRecord(item)) continue;
    const reason = stringOrNull(item.reason);
    if (reason !== null) detail.reasons.push(reason);
    const delay = stringOrNull(item.retryDelay);
    if (delay !== null) detail.retryDelayMs = parseDurationMs(delay);
  }
  return detail;
}

/** A protobuf Duration in JSON: "38s", "0.5s". */
function parseDurationMs(value: string): number | null {
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return match?.[1] === undefined ? null : Math.ceil(Number(match[1]) * 1000);
}
