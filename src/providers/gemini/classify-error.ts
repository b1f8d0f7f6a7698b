/**
 * Gemini errors → UpstreamFailure. The body is Google's `{error: {code, message, status, details}}`
 * (an array of one such object from some endpoints); `status` is the gRPC-style name
 * (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, UNAVAILABLE...). A 429 may say when to retry in a
 * `google.rpc.RetryInfo` detail rather than a header.
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import { parseRetryAfterMs } from '../openai/classify-error.js';
import type { FailureType, UpstreamFailure } from '../types.js';

type Headers = Record<string, string | string[] | undefined>;

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
  headers: Headers,
  bodyText: string,
  nowMs: number,
): UpstreamFailure {
  const raw = parseJsonOrText(bodyText);
  const detail = readErrorDetail(raw);
  return {
    type: failureType(status, detail),
    status,
    message: detail.message ?? `HTTP ${status}`,
    providerCode: detail.status ?? detail.code,
    retryAfterMs: parseRetryAfterMs(headers, nowMs) ?? detail.retryDelayMs,
    raw,
  };
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
  NOT_FOUND: 'bad_request',
};

function failureType(httpStatus: number | null, detail: ErrorDetail): FailureType {
  // A bad key is a 400 INVALID_ARGUMENT at Google: check it before the caller is blamed.
  if (
    detail.reasons.includes('API_KEY_INVALID') ||
    (detail.message !== null && /API key not valid|API key expired/i.test(detail.message))
  )
    return 'auth';
  if (detail.message !== null && CONTEXT_LENGTH_MESSAGE.test(detail.message)) return 'context_length_exceeded';
  if (httpStatus === 429) return 'rate_limited';
  if (httpStatus === 408 || httpStatus === 504) return 'timeout';
  if (httpStatus !== null && httpStatus >= 500 && httpStatus <= 599) return 'server';
  if (httpStatus === 401 || httpStatus === 403) return 'auth';
  const byStatus = detail.status === null ? undefined : STATUS_FAILURES[detail.status];
  if (byStatus !== undefined && byStatus !== 'bad_request') return byStatus;
  if (detail.message !== null && CONTENT_POLICY_MESSAGE.test(detail.message)) return 'content_policy';
  if (byStatus !== undefined || (httpStatus !== null && httpStatus >= 400 && httpStatus <= 499)) return 'bad_request';
  // No usable status: in a stream, an unknown error is most likely transient.
  return httpStatus === null ? 'server' : 'invalid_response';
}

// "The input token count (1131246) exceeds the maximum number of tokens allowed (1048576)."
const CONTEXT_LENGTH_MESSAGE =
  /input token count.*exceeds|exceeds the maximum number of tokens|context (window|length)/i;
const CONTENT_POLICY_MESSAGE = /safety|prohibited content|blocked/i;

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

function parseJsonOrText(bodyText: string): unknown {
  try {
    return JSON.parse(bodyText) as unknown;
  } catch {
    return bodyText;
  }
}
