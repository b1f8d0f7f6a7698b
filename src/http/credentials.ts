/**
 * The one credential a request carries in `Authorization`, read from the raw headers: Node keeps only
 * the first of several `Authorization` headers, so a request carrying two (say, keys of two accounts)
 * would otherwise be served with whichever came first. Ambiguity is refused before any lookup.
 */
import type { FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';

export function singleAuthorization(request: FastifyRequest): string | undefined {
  const raw = request.raw.rawHeaders;
  let found: string | undefined;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') {
      count += 1;
      found = raw[i + 1];
    }
  }
  if (count > 1)
    throw new TollgateError('auth.invalid_key', 'Several Authorization headers: send exactly one credential');
  // One header, several credentials ("Bearer a, Bearer b" or "Bearer a,b"): no key or token contains a comma.
  if (found !== undefined && found.includes(','))
    throw new TollgateError(
      'auth.invalid_key',
      'The Authorization header carries several credentials: send exactly one',
    );
  return found;
}
