/**
 * Expected failures are values with stable codes. `http/error-table.ts` maps every code to a status
 * once; nothing else in the code base decides an HTTP status.
 */
export const ERROR_CODES = [
  'request.invalid_json',
  'request.invalid_body',
  'request.body_too_large',
  'request.unsupported_encoding',
  'route.not_found',
  'route.method_not_allowed',
  'auth.missing_key',
  'auth.invalid_key',
  'auth.wrong_key_kind',
  'auth.admin_unauthorized',
  'auth.admin_disabled',
  'auth.invalid_credentials',
  'auth.no_session',
  'auth.csrf',
  'oauth.invalid_code',
  'oauth.code_expired',
  'catalog.unknown_model',
  'resource.not_found',
  'resource.conflict',
  'billing.insufficient_credits',
  'billing.key_limit_exceeded',
  'guardrail.forbidden',
  'moderation.flagged',
  'moderation.unavailable',
  'feature.disabled',
  'secret_scanning.invalid_signature',
  'request.contains_key',
  'limits.rate_limited',
  'routing.no_endpoint',
  'upstream.request_rejected',
  'upstream.rate_limited',
  'upstream.timeout',
  'upstream.unavailable',
  'store.unavailable',
  'server.shutting_down',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * `metadata.error_type` (docs/api.md, "Errors"): what kind of failure it was, the same words in a JSON
 * error and in a stream's in-band error chunk. Declared once here; `ErrorOptions.metadata` accepts no
 * other value.
 */
export const ERROR_TYPES = [
  'rate_limit_exceeded',
  'timeout',
  'provider_unavailable',
  'server',
  'invalid_response',
  'bad_request',
  'content_policy',
  'context_length_exceeded',
  'moderation_unavailable',
] as const;

export type ErrorType = (typeof ERROR_TYPES)[number];

/** An error's metadata: free-form, except `error_type`, which is one of `ERROR_TYPES`. */
export type ErrorMetadata = Record<string, unknown> & { error_type?: ErrorType };

export interface ErrorOptions {
  metadata?: ErrorMetadata;
  headers?: Record<string, string>;
  /** For pass-through upstream 4xx: the status the upstream gave (only for `upstream.request_rejected`). */
  status?: number;
  cause?: unknown;
}

export class TollgateError extends Error {
  readonly code: ErrorCode;
  readonly metadata: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  readonly status: number | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TollgateError';
    this.code = code;
    this.metadata = options.metadata;
    this.headers = options.headers;
    this.status = options.status;
  }
}

export function isTollgateError(value: unknown): value is TollgateError {
  return value instanceof TollgateError;
}

/** The store (database) could not be reached: what a cache may answer from stale data for. */
export function isStoreOutage(error: unknown): boolean {
  return isTollgateError(error) && error.code === 'store.unavailable';
}
