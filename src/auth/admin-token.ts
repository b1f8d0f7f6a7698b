/** Operator authentication (admin API, metrics): a bearer token from the environment, compared in constant time. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { TollgateError } from '../core/errors.js';

export function adminGuard(
  adminToken: string | null,
  purpose: 'admin' | 'metrics' = 'admin',
): (authorization: string | undefined) => void {
  const expected = adminToken ? createHash('sha256').update(adminToken).digest() : null;
  return (authorization) => {
    if (!expected)
      throw new TollgateError(
        'auth.admin_disabled',
        'The admin API is disabled: set TOLLGATE_ADMIN_TOKEN to enable it',
      );
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    // Hash both sides so the comparison is constant-time whatever the length of the guess.
    const given = createHash('sha256')
      .update(match?.[1] ?? '')
      .digest();
    if (!match || !timingSafeEqual(given, expected))
      throw new TollgateError(
        'auth.admin_unauthorized',
        purpose === 'admin' ? 'Invalid admin token' : 'Invalid metrics token',
      );
  };
}
