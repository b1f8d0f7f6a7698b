/**
 * The one table from error codes to HTTP statuses, and the one renderer to the wire error record
 * `{ error: { code, message, metadata? } }`. `error-table.test.ts` fails when a code is unmapped.
 */
import { redactKeys } from '../auth/key-format.js';
import { TollgateError, type ErrorCode } from '../core/errors.js';

export const ERROR_STATUS: Record<ErrorCode, number> = {
  'request.invalid_json': 400,
  'request.invalid_body': 400,
  'request.body_too_large': 413,
  'request.unsupported_encoding': 415,
  'route.not_found': 404,
  'route.method_not_allowed': 405,
  'auth.missing_key': 401,
  'auth.invalid_key': 401,
  'auth.wrong_key_kind': 401,
  'auth.admin_unauthorized': 401,
  'auth.admin_disabled': 403,
  'auth.invalid_credentials': 401,
  'auth.no_session': 401,
  'auth.csrf': 403,
  'oauth.invalid_code': 403,
  'oauth.code_expired': 403,
  'catalog.unknown_model': 400,
  'resource.not_found': 404,
  'resource.conflict': 409,
  'billing.insufficient_credits': 402,
  'billing.key_limit_exceeded': 402,
  'guardrail.forbidden': 403,
  'moderation.flagged': 403,
  'moderation.unavailable': 503,
  'feature.disabled': 403,
  'secret_scanning.invalid_signature': 401,
  'request.contains_key': 400,
  'limits.rate_limited': 429,
  'routing.no_endpoint': 404,
  'upstream.request_rejected': 400,
  'upstream.rate_limited': 429,
  'upstream.timeout': 408,
  'upstream.unavailable': 502,
  'store.unavailable': 503,
  'server.shutting_down': 503,
  internal: 500,
};

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: { error: { code: number; message: string; metadata?: Record<string, unknown> } };
}

/** Pass-through statuses an upstream may give for the caller's own fault. */
const PASS_THROUGH = new Set([400, 413, 422]);

export function statusOf(error: TollgateError): number {
  if (error.code === 'upstream.request_rejected' && error.status !== undefined && PASS_THROUGH.has(error.status))
    return error.status;
  return ERROR_STATUS[error.code];
}

/** An error message quoting the caller's input is cut here: a 100 KB model name is not sent back whole. */
const MAX_MESSAGE_CHARS = 1000;

/** The message as the caller may see it: no key (a caller's key pasted into a field is echoed back) and bounded. */
function wireMessage(message: string): string {
  const redacted = redactKeys(message);
  return redacted.length <= MAX_MESSAGE_CHARS ? redacted : `${redacted.slice(0, MAX_MESSAGE_CHARS)}…`;
}

/**
 * Metadata as the caller may see it: every text in it treated as the message is (the names a field
 * refused, an e-mail a 409 repeats, an upstream's own error text quote the caller's input too).
 */
function wireValue(value: unknown): unknown {
  if (typeof value === 'string') return wireMessage(value);
  if (Array.isArray(value)) return value.map(wireValue);
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) copy[name] = wireValue(field);
  return copy;
}

export function renderError(error: unknown): RenderedError {
  const known = error instanceof TollgateError ? error : new TollgateError('internal', 'Internal server error');
  const status = statusOf(known);
  const body: RenderedError['body'] = { error: { code: status, message: wireMessage(known.message) } };
  if (known.metadata) body.error.metadata = wireValue(known.metadata) as Record<string, unknown>;
  return { status, headers: known.headers ?? {}, body };
}
