/**
 * Failure vocabulary of the execute loop: how a thrown transport error becomes an UpstreamFailure,
 * which failures move on to the next endpoint, and what the caller gets when every attempt failed
 * (docs/api.md).
 */
import { errors } from 'undici';
import { TollgateError, type ErrorType } from '../core/errors.js';
import type { UpstreamFailure } from '../providers/types.js';
import type { PlannedAttempt } from './plan.js';
import type { CancelState } from '../core/cancellation.js';
import { AttemptAbort, abortReasonOf } from './upstream-client.js';

export interface AttemptRecord {
  providerId: string;
  providerName: string;
  model: string;
  status: number | null;
  latencyMs: number;
  failure: UpstreamFailure | null;
}

/** The failure of a transport error (check `isTransportError` first: anything else is not the provider's doing). */
export function failureFromThrown(error: unknown, signal: CancelState): UpstreamFailure {
  // A body read aborted by our own timer rejects with the AttemptAbort itself (undici passes the signal's reason).
  const reason = abortReasonOf(signal) ?? (error instanceof AttemptAbort ? error.reason : null);
  if (reason === 'connect_timeout' || reason === 'first_token_timeout' || reason === 'idle_timeout') {
    return {
      type: 'timeout',
      status: null,
      message: `Provider timed out (${reason.replace('_', ' ')})`,
      providerCode: null,
      retryAfterMs: null,
      raw: null,
    };
  }
  if (isHttpParserError(error)) {
    // A status line, header or chunk framing undici could not parse: the provider's answer is broken.
    return {
      type: 'invalid_response',
      status: null,
      message: 'Invalid response from provider: malformed HTTP',
      providerCode: null,
      retryAfterMs: null,
      raw: null,
    };
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return {
      type: 'timeout',
      status: null,
      message: 'Provider timed out',
      providerCode: null,
      retryAfterMs: null,
      raw: null,
    };
  }
  return {
    type: 'connection',
    status: null,
    message: `Provider connection failed${connectionProblem(code)}`,
    providerCode: null,
    retryAfterMs: null,
    raw: null,
  };
}

/**
 * What went wrong with the connection, in words (": connection refused"), or nothing: the caller and
 * the operator read the message, and a library's error code (`UND_ERR_SOCKET`) tells neither of them
 * anything — nor should the gateway's internals be part of its answers.
 */
function connectionProblem(code: unknown): string {
  if (typeof code !== 'string') return '';
  switch (code) {
    case 'ECONNREFUSED':
      return ': connection refused';
    case 'ECONNRESET':
    case 'ECONNABORTED':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return ': the provider closed the connection';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return ': host not found';
    case 'EHOSTUNREACH':
    case 'EHOSTDOWN':
    case 'ENETUNREACH':
    case 'ENETDOWN':
      return ': host unreachable';
    case 'ETIMEDOUT':
      return ': connection timed out';
    case 'ERR_HTTP2_NOT_NEGOTIATED':
      return ': the provider does not speak HTTP/2';
  }
  if (code.startsWith('ERR_HTTP2')) return ': HTTP/2 error';
  if (code.includes('CERT') || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE')
    return ": the provider's TLS certificate was not accepted";
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code === 'EPROTO') return ': TLS handshake failed';
  return '';
}

/** The upstream answered with something that is not a valid answer (bad JSON, a broken stream, too many malformed events). */
export function invalidResponse(reason: string): UpstreamFailure {
  return {
    type: 'invalid_response',
    status: null,
    message: `Invalid response from provider: ${reason}`,
    providerCode: null,
    retryAfterMs: null,
    raw: null,
  };
}

/** Socket and DNS error codes of a connection that failed or broke (Node's `net`, `dns`, `tls`). */
const SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EPROTO',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/**
 * Whether a thrown error came from talking to the upstream — undici, the socket, DNS, TLS, an HTTP/2
 * stream or session, or one of our own aborts — rather than from our own code (a bug, a body that
 * cannot be serialised). Only the former says something about the endpoint; the latter must not be
 * retried elsewhere nor open a breaker that other callers would then hit.
 */
export function isTransportError(error: unknown, signal: CancelState): boolean {
  if (signal.aborted || error instanceof AttemptAbort) return true;
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 3; depth++) {
    const { code, name } = current as { code?: unknown; name?: unknown };
    if (name === 'AbortError' || isHttpParserError(current)) return true;
    if (
      typeof code === 'string' &&
      (code.startsWith('UND_ERR') ||
        code.startsWith('ERR_TLS') ||
        code.startsWith('ERR_SSL') ||
        code.startsWith('ERR_HTTP2') ||
        code.includes('CERT') ||
        SOCKET_CODES.has(code))
    )
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** undici's error for an answer that is not HTTP it can parse (it has no `code`). */
function isHttpParserError(error: unknown): boolean {
  return error instanceof errors.HTTPParserError || (error as { name?: unknown } | null)?.name === 'HTTPParserError';
}

/** Failures another endpoint may not have. The caller's own faults and policy rejections do not move on. */
export function movesOn(failure: UpstreamFailure): boolean {
  switch (failure.type) {
    case 'rate_limited':
    case 'timeout':
    case 'connection':
    case 'server':
    case 'auth':
    case 'not_found':
    case 'invalid_response':
      return true;
    case 'bad_request':
    case 'content_policy':
    case 'context_length_exceeded':
      return false;
  }
}

export function errorTypeOf(failure: UpstreamFailure): ErrorType {
  switch (failure.type) {
    case 'rate_limited':
      return 'rate_limit_exceeded';
    case 'timeout':
      return 'timeout';
    case 'connection':
    case 'auth':
    case 'not_found':
      return 'provider_unavailable';
    case 'server':
      return 'server';
    case 'invalid_response':
      return 'invalid_response';
    case 'bad_request':
      return 'bad_request';
    case 'content_policy':
      return 'content_policy';
    case 'context_length_exceeded':
      return 'context_length_exceeded';
  }
}

/** The error for a failure that must not fail over: the caller's request as the provider judged it. */
export function rejectionError(failure: UpstreamFailure, providerName: string): TollgateError {
  return new TollgateError('upstream.request_rejected', failure.message, {
    status: failure.status ?? 400,
    metadata: {
      provider_name: providerName,
      raw: failure.raw,
      error_type: errorTypeOf(failure),
      provider_code: failure.providerCode,
    },
  });
}

/**
 * The error a stream already under way ends with for a provider's error event, with the status the
 * same failure gets before the first byte: 429 for a rate limit (as `exhaustedError`), 400 — or the
 * 413/422 given — for the caller's request as the provider judged it (as `rejectionError`), 502 for
 * the rest. `message` is what the caller may read of it (`serverSideMessage` for a server's own).
 */
export function inBandError(failure: UpstreamFailure, message: string): TollgateError {
  const metadata = { error_type: errorTypeOf(failure), provider_code: failure.providerCode };
  if (failure.type === 'rate_limited') return new TollgateError('upstream.rate_limited', message, { metadata });
  if (!movesOn(failure))
    return new TollgateError('upstream.request_rejected', message, { status: failure.status ?? 400, metadata });
  return new TollgateError('upstream.unavailable', message, { metadata });
}

/**
 * The provider failed on its side and said so in its own words: an HTTP 5xx, or an error (in a 200
 * stream too) classed as a server error — not one the gateway describes itself (`ours`).
 */
export function isServerSide(failure: UpstreamFailure): boolean {
  return (failure.type === 'server' || (failure.status ?? 0) >= 500) && failure.ours !== true;
}

/**
 * What the caller reads of a server-side failure: its status, never its own text (docs/api.md §1:
 * never a stack trace or a secret) — a failing server may put its stack, addresses or connection
 * strings in its error message, in an HTTP 5xx body or in an error event mid-stream alike.
 */
export function serverSideMessage(failure: UpstreamFailure): string {
  // An error event's code is no HTTP status: "HTTP 500" would tell of an answer that never came.
  return (failure.status ?? 0) >= 500 && failure.inStream !== true
    ? `Provider returned error: HTTP ${failure.status}`
    : 'Provider returned error: server error';
}

/** What the caller gets when every attempt failed. */
export function exhaustedError(attempts: readonly AttemptRecord[]): TollgateError {
  const failures = attempts.map((a) => a.failure).filter((f): f is UpstreamFailure => f !== null);
  const last = attempts.at(-1);
  const lastFailure = failures.at(-1);
  if (failures.length > 0 && failures.every((f) => f.type === 'rate_limited')) {
    const hints = failures.map((f) => f.retryAfterMs);
    const headers: Record<string, string> = {};
    if (hints.every((h): h is number => h !== null))
      headers['retry-after'] = String(Math.max(1, Math.ceil(Math.min(...hints) / 1000)));
    return new TollgateError(
      'upstream.rate_limited',
      `${last?.model ?? 'The model'} is temporarily rate-limited upstream. Please retry shortly.`,
      {
        headers,
        metadata: {
          error_type: 'rate_limit_exceeded',
          provider_name: last?.providerName ?? null,
          provider_code: lastFailure?.providerCode ?? null,
          raw: lastFailure?.raw ?? null,
        },
      },
    );
  }
  if (failures.length > 0 && failures.every((f) => f.type === 'timeout')) {
    return new TollgateError('upstream.timeout', 'The request timed out: no provider answered in time', {
      metadata: { error_type: 'timeout', provider_name: last?.providerName ?? null },
    });
  }
  // An upstream 401/403 is about the operator's provider key: its text may echo part of that key, and
  // it is none of the caller's business — say only that the provider refused the gateway's credentials.
  const ownCredentials = lastFailure?.type === 'auth';
  // A 404 names the provider's model (the operator's catalog): the caller learns only that it is not served.
  const notServed = lastFailure?.type === 'not_found';
  // A 5xx body is the provider's internals (proxy pages, stack traces): its message is enough.
  const serverSide = lastFailure !== undefined && isServerSide(lastFailure);
  const message = !lastFailure
    ? 'No provider could serve the request'
    : ownCredentials
      ? "The provider refused the gateway's credentials"
      : notServed
        ? 'The provider does not serve this model'
        : serverSide
          ? serverSideMessage(lastFailure)
          : `Provider returned error: ${lastFailure.message}`;
  return new TollgateError('upstream.unavailable', message, {
    metadata: {
      error_type: lastFailure ? errorTypeOf(lastFailure) : 'provider_unavailable',
      provider_name: last?.providerName ?? null,
      provider_code: lastFailure?.providerCode ?? null,
      raw: ownCredentials || notServed || serverSide ? null : (lastFailure?.raw ?? null),
    },
  });
}

/** The request was cut because the process is shutting down (grace period over). */
export function shuttingDownError(): TollgateError {
  return new TollgateError('server.shutting_down', 'The gateway is shutting down', {
    metadata: { error_type: 'server' },
  });
}

/** Nothing was attempted: every endpoint of the plan is behind an open circuit breaker. */
export function circuitOpenError(planned: PlannedAttempt, retryInMs: number): TollgateError {
  const headers: Record<string, string> =
    retryInMs > 0 ? { 'retry-after': String(Math.max(1, Math.ceil(retryInMs / 1000))) } : {};
  return new TollgateError(
    'upstream.unavailable',
    `Every provider of ${planned.model.id} is temporarily unavailable after repeated failures; retry shortly`,
    {
      headers,
      metadata: {
        error_type: 'provider_unavailable',
        // No provider was called: naming the first blocked one ("[Prov A] …" in the AI SDK) said one failed now.
        provider_name: null,
        provider_code: null,
        raw: null,
      },
    },
  );
}
