/**
 * The dashboard's sign-in (docs/api.md, "The dashboard's session API"):
 * POST/GET/DELETE /session, GET /session/status (the dashboard's probe: 200 either way, so a
 * signed-out page load logs no failed request), sign out everywhere, sign-up when open, password change.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ActiveSession } from '../../auth/sessions.js';
import {
  assertSignUpOpen,
  changePassword,
  changePasswordSchema,
  credentialsSchema,
  signIn,
  signUp,
  signUpSchema,
} from '../../pipeline/sign-in.js';
import { TollgateError } from '../../core/errors.js';
import { sessionAccount } from '../../pipeline/accounts.js';
import type { AccountRecord } from '../../store/types.js';
import { checkOrigin, requireSession } from '../account-auth.js';
import { parseBody } from '../parse-body.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { deletedResponse, sessionResponse, sessionStatusResponse } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';
import { clearSessionCookie, readSessionCookie, setSessionCookie } from '../session-cookie.js';

function renderSession(account: Pick<AccountRecord, 'id' | 'email'>, active: ActiveSession) {
  return {
    data: {
      account: { id: account.id, email: account.email },
      csrf_token: active.csrfToken,
      expires_at: new Date(active.expiresAt).toISOString(),
    },
  };
}

export function registerSessionRoutes(routes: RouteTable, services: Services): void {
  const deps = services.accountAuth;
  const session = json(sessionResponse, 'Signed in');

  const signedIn = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    result: { account: AccountRecord; token: string; active: ActiveSession },
  ) => {
    setSessionCookie(request, reply, result.token, result.active.session.expiresAt - result.active.session.createdAt);
    // Neither the cookie nor the CSRF token may be cached by anything in between.
    return reply.code(status).header('cache-control', 'no-store').send(renderSession(result.account, result.active));
  };

  routes.add(
    'POST',
    '/api/v1/session',
    async (request, reply) => {
      // No CSRF token exists before sign-in; the Origin check stops a foreign page from signing the browser in.
      checkOrigin(request);
      const input = parseBody(credentialsSchema, request.body);
      const result = await signIn(deps, input, request.ip);
      request.log.info({ account: result.account.id, session: result.active.session.id.slice(0, 12) }, 'signed in');
      return signedIn(request, reply, 200, result);
    },
    {
      auth: 'none',
      doc: {
        summary: 'Sign in: sets the session cookie',
        tag: 'Session',
        body: credentialsSchema,
        responses: { 200: session },
        errors: [401, 403, 429],
      },
    },
  );

  /** The request's live session, or null when it has none (a dead session's cookie is cleared). */
  const currentSession = async (request: FastifyRequest, reply: FastifyReply) => {
    let active: ActiveSession;
    try {
      ({ active } = await requireSession(services, request));
    } catch (error) {
      if (!(error instanceof TollgateError) || error.code !== 'auth.no_session') throw error;
      // A dead session's cookie is useless: tell the browser to drop it.
      if (readSessionCookie(request) !== undefined) clearSessionCookie(request, reply);
      return null;
    }
    return renderSession(await sessionAccount(services.keys, active.session.accountId), active);
  };

  routes.add(
    'GET',
    '/api/v1/session',
    async (request, reply) => {
      const current = await currentSession(request, reply);
      if (current === null) throw new TollgateError('auth.no_session', 'Not signed in, or the session has expired');
      return reply.header('cache-control', 'no-store').send(current);
    },
    {
      auth: 'none',
      doc: {
        summary: 'The current session, with its CSRF token',
        tag: 'Session',
        responses: { 200: json(sessionResponse) },
        errors: [401],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/session/status',
    async (request, reply) => {
      const current = await currentSession(request, reply);
      return reply.header('cache-control', 'no-store').send(current ?? { data: null });
    },
    {
      auth: 'none',
      doc: {
        summary: 'The current session, or `data: null` when there is none (200 either way)',
        tag: 'Session',
        responses: { 200: json(sessionStatusResponse) },
        errors: [],
      },
    },
  );

  routes.add(
    'DELETE',
    '/api/v1/session',
    async (request, reply) => {
      const { active } = await requireSession(services, request);
      await deps.sessions.revoke(active.session.id);
      clearSessionCookie(request, reply);
      return { deleted: true };
    },
    { auth: 'session', doc: { summary: 'Sign out', tag: 'Session', responses: { 200: json(deletedResponse) } } },
  );

  routes.add(
    'POST',
    '/api/v1/session/revoke-all',
    async (request, reply) => {
      const { active } = await requireSession(services, request);
      const revoked = await deps.sessions.revokeAll(active.session.accountId);
      clearSessionCookie(request, reply);
      return { revoked };
    },
    {
      auth: 'session',
      doc: {
        summary: 'Sign out everywhere (every session of the account)',
        tag: 'Session',
        responses: { 200: json(z.object({ revoked: z.int() })) },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/signup',
    // The dashboard offers its sign-up page only where sign-up is open.
    () => ({ data: { open: deps.signup === 'open' } }),
    {
      auth: 'none',
      doc: {
        summary: 'Whether anyone may sign up on this gateway (`accounts.signup`)',
        tag: 'Session',
        responses: { 200: json(z.object({ data: z.object({ open: z.boolean() }) }), 'Sign-up is open or closed') },
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/signup',
    async (request, reply) => {
      checkOrigin(request);
      assertSignUpOpen(deps); // closed answers 403 whatever the body
      const input = parseBody(signUpSchema, request.body);
      return signedIn(request, reply, 201, await signUp(deps, input, request.ip));
    },
    {
      auth: 'none',
      doc: {
        summary: 'Create an account and sign in (when `accounts.signup` is open)',
        tag: 'Session',
        body: signUpSchema,
        responses: { 201: { ...session, description: 'Signed up and signed in' } },
        errors: [403, 409, 429],
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/account/password',
    async (request) => {
      const { active } = await requireSession(services, request);
      const input = parseBody(changePasswordSchema, request.body);
      await changePassword(deps, active.session.accountId, active.session.id, input, request.ip);
      return { updated: true };
    },
    {
      auth: 'session',
      doc: {
        summary: 'Change the password (ends the account’s other sessions)',
        tag: 'Session',
        body: changePasswordSchema,
        responses: { 200: json(z.object({ updated: z.literal(true) })) },
        errors: [429],
      },
    },
  );
}
