/**
 * What every provider adapter does with an HTTP error the same way: read the body as JSON when it is
 * JSON (as text otherwise), take the retry hint from the headers, and map the status to a failure
 * once the provider's own reading of the body had its say. Each adapter keeps only what its API
 * says differently (its error shape, its codes, its messages).
 */
import type { FailureType, UpstreamFailure } from './types.js';
import { parseUpstreamJson } from './json-shape.js';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** What an adapter reads from an error body. */
export interface ErrorReading {
  message: string | null;
  providerCode: string | number | null;
  /** Decided by the body before the status (a bad key sent as 400, a context-length error sent as 400 or 413…). */
  type: FailureType | null;
  /** A 4xx status the body does not explain: the provider's own mapping (status names, content policy), or null for the default. */
  clientErrorType?: FailureType | null;
  /** A retry hint inside the body (the header wins). */
  retryAfterMs?: number | null;
}

export function parseJsonOrText(bodyText: string): unknown {
  try {
    return parseUpstreamJson(bodyText);
  } catch {
    return bodyText;
  }
}

/**
 * The failure an HTTP status means: 429 rate-limited; 408 and 504 timeouts; other 5xx the provider's
 * trouble; 401, 402 (our provider account cannot pay) and 403 our credentials, 404 a model the endpoint
 * does not serve — another endpoint may still succeed; other 4xx the request's fault unless
 * `clientErrorType` says otherwise; an "error" with
 * a 1xx–3xx status is not an answer.
 */
export function failureTypeForStatus(status: number, clientErrorType: FailureType | null = null): FailureType {
  if (status === 429) return 'rate_limited';
  if (status === 408 || status === 504) return 'timeout';
  if (status >= 500 && status <= 599) return 'server';
  if (status >= 400 && status <= 499) {
    if (clientErrorType !== null) return clientErrorType;
    if (status === 401 || status === 402 || status === 403) return 'auth';
    // The caller names our model, never the provider's: a 404 is the endpoint's, not the request's.
    if (status === 404) return 'not_found';
    return 'bad_request';
  }
  return 'invalid_response';
}

/** An HTTP error response as an UpstreamFailure, through the adapter's reading of its body. */
export function classifyHttpError(
  status: number,
  headers: ResponseHeaders,
  bodyText: string,
  nowMs: number,
  read: (raw: unknown) => ErrorReading,
): UpstreamFailure {
  const raw = parseJsonOrText(bodyText);
  const reading = read(raw);
  return {
    type: reading.type ?? failureTypeForStatus(status, reading.clientErrorType ?? null),
    status,
    message: reading.message ?? `HTTP ${status}`,
    providerCode: reading.providerCode,
    retryAfterMs: saneRetryAfterMs(parseRetryAfterMs(headers, nowMs) ?? reading.retryAfterMs ?? null),
    raw,
  };
}

/** `retry-after-ms` (OpenAI, more precise) wins over `retry-after` (seconds or an HTTP date). */
/**
 * The longest wait a provider's hint is taken as: one day. Callers get it as their `Retry-After`;
 * 400 digits (Infinity) or 3,000 years would be an invalid header or a client that never retries.
 */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

function saneRetryAfterMs(ms: number | null): number | null {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return null;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

export function parseRetryAfterMs(headers: ResponseHeaders, nowMs: number): number | null {
  return saneRetryAfterMs(rawRetryAfterMs(headers, nowMs));
}

function rawRetryAfterMs(headers: ResponseHeaders, nowMs: number): number | null {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const value = headerValue(headers, 'retry-after');
  if (value === null) return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  // An HTTP date names a month; Date.parse alone would also take "-5" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

function headerValue(headers: ResponseHeaders, name: string): string | null {
  let value = headers[name];
  if (value === undefined) {
    // Node and undici lower-case header names; a hand-built record may not.
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : headers[key];
  }
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? null : first;
}

/**
 * An SSE `event: error` whose data is not JSON (a plain-text reason, as proxies and SSE servers in
 * front of a provider send it): still the provider ending the stream with an error, at once — not
 * a malformed event left to the stall timer.
 */
export function plainStreamError(data: string): UpstreamFailure {
  const text = data.trim();
  return {
    type: 'server',
    status: null,
    message: text === '' ? 'upstream reported an error in the stream' : preview(text),
    providerCode: null,
    retryAfterMs: null,
    raw: null,
  };
}

/**
 * How a text cut short ends: the adapters' previews below, and an error body past its read limit
 * (routing/upstream-client.ts `readBounded`). The secret scrubber also removes a key cut in two at
 * such an end (routing/secret-scrubber.ts).
 */
export const CUT = '…';

/**
 * What a malformed event's reason says of its text: its length, never the text — an upstream's
 * non-JSON event may be its stack trace, a connection string or a piece of the answer, and the
 * reason reaches the caller's error and the logs.
 */
export function unreadable(text: string): string {
  return `stream event is not JSON (${text.length} characters)`;
}

/** An upstream text as quoted in a plain-text error event's failure: its first 80 characters. */
export function preview(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}${CUT}` : text;
}
