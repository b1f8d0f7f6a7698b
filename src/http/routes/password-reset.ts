/**
 * GET /api/v1/password-reset → `{ data: { available } }` (whether a link can be made: the dashboard's form);
 * POST /api/v1/password-reset `{ email }` → always 202 `{ accepted: true }` (no account enumeration),
 * or 429 past the client address's budget (taken for every request, whatever the e-mail), or 403 for
 * every request when the gateway cannot make a link (`mail.public_url` unset);
 * POST /api/v1/password-reset/check `{ token }` → 200 `{ data: { valid } }` (the page's first look at a link);
 * POST /api/v1/password-reset/confirm `{ token, new_password }` → 200 `{ updated: true }`, or 400.
 * None needs a session; the POSTs check the Origin like sign-in does (a foreign page must not drive them).
 */
import {
  admitPasswordResetRequest,
  assertPasswordResetAvailable,
  confirmPasswordReset,
  passwordResetTokenValid,
  requestPasswordReset,
  resetCheckSchema,
  resetConfirmSchema,
  resetRequestSchema,
  type PasswordResetDeps,
} from '../../pipeline/password-reset.js';
import { checkOrigin } from '../account-auth.js';
import { parseBody } from '../parse-body.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';

export function registerPasswordResetRoutes(routes: RouteTable, deps: PasswordResetDeps): void {
  routes.add(
    'POST',
    '/api/v1/password-reset',
    async (request, reply) => {
      checkOrigin(request);
      assertPasswordResetAvailable(deps);
      const { email } = parseBody(resetRequestSchema, request.body);
      await admitPasswordResetRequest(deps, request.ip);
      // After the answer: the same text and timing whether or not the address has an account.
      setImmediate(() => void requestPasswordReset(deps, email));
      return reply.code(202).header('cache-control', 'no-store').send({ accepted: true });
    },
    {
      auth: 'none',
      doc: {
        summary: 'Mail a password-reset link (the same answer whether or not the address has an account)',
        tag: 'Session',
        body: resetRequestSchema,
        responses: { 202: json(z.object({ accepted: z.literal(true) }), 'Accepted') },
        errors: [403, 429],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/password-reset',
    // The dashboard offers its form only where a link can be made.
    () => ({ data: { available: deps.publicUrl !== null } }),
    {
      auth: 'none',
      doc: {
        summary: 'Whether password reset by e-mail is set up on this gateway (`mail.public_url`)',
        tag: 'Session',
        responses: {
          200: json(z.object({ data: z.object({ available: z.boolean() }) }), 'Password reset is set up or not'),
        },
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/password-reset/check',
    async (request, reply) => {
      checkOrigin(request);
      const valid = await passwordResetTokenValid(deps, parseBody(resetCheckSchema, request.body));
      return reply.header('cache-control', 'no-store').send({ data: { valid } });
    },
    {
      auth: 'none',
      doc: {
        summary: 'Whether a reset token can still be used (not used, not expired)',
        tag: 'Session',
        body: resetCheckSchema,
        responses: { 200: json(z.object({ data: z.object({ valid: z.boolean() }) })) },
        errors: [403],
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/password-reset/confirm',
    async (request, reply) => {
      checkOrigin(request);
      await confirmPasswordReset(deps, parseBody(resetConfirmSchema, request.body));
      return reply.header('cache-control', 'no-store').send({ updated: true });
    },
    {
      auth: 'none',
      doc: {
        summary: 'Set a new password with a reset token (single use, 30 minutes)',
        tag: 'Session',
        body: resetConfirmSchema,
        responses: { 200: json(z.object({ updated: z.literal(true) })) },
        errors: [403],
      },
    },
  );
}
