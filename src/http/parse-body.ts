/**
 * Validates a JSON body (or a query) against a zod schema → 400 with a precise message. Its strings
 * must be text the stores keep as sent: no NUL (PostgreSQL refuses it; SQLite cut a value there when
 * read back) and no unpaired surrogate (stored as U+FFFD, so two different credit references or
 * passwords became one). A body of JSON `null` is not an empty object.
 */
import { ZodObject, type z } from 'zod';
import { TollgateError } from '../core/errors.js';
import { formatInputPath } from '../pipeline/input-path.js';
import { findBadText } from '../core/storable-text.js';

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body === undefined ? {} : body);
  if (!parsed.success) {
    const message = parsed.error.issues
      .slice(0, 3)
      .map((issue) => withPath(formatInputPath(issue.path), issue.message))
      .join('; ');
    throw new TollgateError('request.invalid_body', `Invalid request: ${message}`);
  }
  // What was sent of each value kept, before a schema tidied it (a name's control characters become
  // spaces): a NUL is refused, not quietly changed; a field the route ignores (a `utm_source` in a
  // query) is not looked at.
  // A loose object keeps every key it was sent; only the ones it declares are read.
  const declared = schema instanceof ZodObject ? new Set(Object.keys(schema.shape as object)) : null;
  refuseBadText(keptAsSent(body, parsed.data, declared));
  return parsed.data;
}

/** "field: message", unless the message names the field already ("expires_at must be in UTC"). */
function withPath(path: string, message: string): string {
  if (message === path || message.startsWith(`${path} `) || message.startsWith(`${path}:`)) return message;
  return `${path}: ${message}`;
}

/** `sent` cut to the object keys and array items `kept` has (a schema's output), values as sent. */
function keptAsSent(sent: unknown, kept: unknown, declared: ReadonlySet<string> | null = null): unknown {
  if (Array.isArray(kept) && Array.isArray(sent)) return kept.map((item, i) => keptAsSent(sent[i], item));
  if (kept !== null && typeof kept === 'object' && sent !== null && typeof sent === 'object' && !Array.isArray(sent)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(kept))
      if (Object.hasOwn(sent, key) && (declared === null || declared.has(key)))
        out[key] = keptAsSent((sent as Record<string, unknown>)[key], (kept as Record<string, unknown>)[key]);
    return out;
  }
  return typeof sent === 'string' ? sent : kept;
}

function refuseBadText(value: unknown): void {
  const bad = findBadText(value, []);
  if (bad !== null)
    throw new TollgateError(
      'request.invalid_body',
      `Invalid request: ${formatInputPath(bad.path)}: ${bad.nul ? 'contains a NUL character' : 'is not valid Unicode text (an unpaired surrogate)'}`,
    );
}
