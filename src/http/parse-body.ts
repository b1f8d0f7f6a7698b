/**
 * Validates a JSON body (or a query) against a zod schema → 400 with a precise message. Its strings
 * must be text the stores keep as sent: no NUL (PostgreSQL refuses it; SQLite cut a value there when
 * read back) and no unpaired surrogate (stored as U+FFFD, so two different credit references or
 * passwords became one). A body of JSON `null` is not an empty object.
 */
import type { z } from 'zod';
import { TollgateError } from '../core/errors.js';
import { formatInputPath } from '../pipeline/input-path.js';
import { findBadText } from '../core/storable-text.js';

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  // What was sent, before any schema tidies it (a name's control characters become spaces): a NUL is
  // refused, not quietly changed.
  refuseBadText(body);
  const parsed = schema.safeParse(body === undefined ? {} : body);
  if (!parsed.success) {
    const message = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${formatInputPath(issue.path)}: ${issue.message}`)
      .join('; ');
    throw new TollgateError('request.invalid_body', `Invalid request: ${message}`);
  }
  refuseBadText(parsed.data);
  return parsed.data;
}

function refuseBadText(value: unknown): void {
  const bad = findBadText(value, []);
  if (bad !== null)
    throw new TollgateError(
      'request.invalid_body',
      `Invalid request: ${formatInputPath(bad.path)}: ${bad.nul ? 'contains a NUL character' : 'is not valid Unicode text (an unpaired surrogate)'}`,
    );
}
