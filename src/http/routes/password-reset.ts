/**
 * POST /api/v1/password-reset `{ email }` → always 202 `{ accepted: true }` (no account enumeration);
 * POST /api/v1/password-reset/confirm `{ token, new_password }` → 200 `{ updated: true }`, or 400.
 * Neither needs a session; both check the Origin like sign-in does (a foreign page must not drive them).
 */
import {
  confirmPasswordReset,
  requestPasswordReset,
  resetConfirmSchema,
  resetRequestSchema,
  type PasswordResetDeps,
} from '../../pipeline/password-reset.js';
import { checkOrigin } from '../account-auth.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';

export function registerPasswordResetRoutes(routes: RouteTable, deps: PasswordResetDeps): void {
  routes.add(
    'POST',
    '/api/v1/password-reset',
    async (request, reply) => {
      checkOrigin(request);
      const { email } = parseBody(resetRequestSchema, request.body);
      // After the answer: the same text and timing whether or not the address has an account.
      setImmediate(() => void requestPasswordReset(deps, email));
      return reply.code(202).header('cache-control', 'no-store').send({ accepted: true });
    },
    { auth: 'none' },
  );

  routes.add(
    'POST',
    '/api/v1/password-reset/confirm',
    async (request, reply) => {
      checkOrigin(request);
      await confirmPasswordReset(deps, parseBody(resetConfirmSchema, request.body));
      return reply.header('cache-control', 'no-store').send({ updated: true });
    },
    { auth: 'none' },
  );
}
