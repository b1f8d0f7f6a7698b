/** Validates a JSON body against a zod schema → 400 with a precise message. */
import type { z } from 'zod';
import { TollgateError } from '../core/errors.js';
import { formatInputPath } from '../pipeline/input-path.js';

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) {
    const message = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${formatInputPath(issue.path)}: ${issue.message}`)
      .join('; ');
    throw new TollgateError('request.invalid_body', `Invalid request: ${message}`);
  }
  return parsed.data;
}
