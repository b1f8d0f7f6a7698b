/**
 * Authentication as a per-route declaration (`auth` in the route's config), resolved by one
 * `onRequest` hook from the headers alone — before any byte of the body is read or parsed, so an
 * anonymous caller cannot make the gateway parse anything. The authenticated principal is attached
 * to the request (`request.principal`); handlers read it, they never authenticate themselves.
 *
 * A new kind of credential (e.g. a dashboard session cookie) is one more `RouteAuth` value and one
 * more resolver in `principalResolvers`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adminGuard } from '../auth/admin-token.js';
import { keyLogId } from '../auth/key-format.js';
import { TollgateError } from '../core/errors.js';
import type { KeyRecord } from '../store/types.js';
import type { ActiveSession } from '../auth/sessions.js';
import { requireSession } from './account-auth.js';
import { singleAuthorization } from './credentials.js';
import { readSessionCookie } from './session-cookie.js';
import type { Services } from './services.js';

/**
 * - `inference`: an inference key (a management key is refused);
 * - `management`: a management key;
 * - `any-key`: either kind of key of the account;
 * - `admin`: the operator's TOLLGATE_ADMIN_TOKEN;
 * - `account`: the account holder — a management key, or the dashboard's session cookie (with the
 *   CSRF defence on state-changing methods);
 * - `account-any`: like `account`, but any key of the account;
 * - `session`: the dashboard's session cookie only (CSRF-checked likewise);
 * - `metrics`: TOLLGATE_METRICS_TOKEN when it is set, else open;
 * - `none`: public.
 */
export type RouteAuth =
  'inference' | 'management' | 'any-key' | 'account' | 'account-any' | 'session' | 'admin' | 'metrics' | 'none';

export type Principal =
  | { kind: 'key'; key: KeyRecord }
  | { kind: 'session'; accountId: string; active: ActiveSession; token: string }
  | { kind: 'operator' }
  | { kind: 'anonymous' };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /** Answer with `Cache-Control: no-store` (implied by any `auth` but `none`). */
    noStore?: boolean;
  }
  interface FastifyRequest {
    /** Who the route's `auth` declaration authenticated; null on `none` routes. */
    principal: Principal | null;
  }
}

export type PrincipalResolver = (request: FastifyRequest, authorization: string | undefined) => Promise<Principal>;

export function principalResolvers(services: Services): Record<Exclude<RouteAuth, 'none'>, PrincipalResolver> {
  const admin = adminGuard(services.config.adminToken);
  const metrics = services.config.metricsToken === null ? null : adminGuard(services.config.metricsToken, 'metrics');
  const key =
    (kind: 'inference' | 'management' | 'any') =>
    async (_request: FastifyRequest, authorization: string | undefined): Promise<Principal> => ({
      kind: 'key',
      key: await services.auth.authenticate(authorization, kind),
    });
  const session: PrincipalResolver = async (request) => {
    const { active, token } = await requireSession(services, request);
    return { kind: 'session', accountId: active.session.accountId, active, token };
  };
  // A bearer key when the request carries one (or no session cookie: then the key's 401), else the session.
  const account =
    (kind: 'management' | 'any'): PrincipalResolver =>
    (request, authorization) =>
      authorization !== undefined || readSessionCookie(request) === undefined
        ? key(kind)(request, authorization)
        : session(request, authorization);
  return {
    inference: key('inference'),
    management: key('management'),
    'any-key': key('any'),
    account: account('management'),
    'account-any': account('any'),
    session,
    admin: async (_request, authorization) => {
      admin(authorization);
      return { kind: 'operator' };
    },
    metrics: async (_request, authorization) => {
      if (metrics === null) return { kind: 'anonymous' };
      metrics(authorization);
      return { kind: 'operator' };
    },
  };
}

/** A body is on its way (announced by Content-Length or chunked transfer). */
function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

/**
 * The route hook: the body limit against the announced length, then the declared authentication.
 * A refusal with a body still on the wire closes the connection, so that body is never read.
 */
export function routeGuard(app: FastifyInstance, resolvers: Record<Exclude<RouteAuth, 'none'>, PrincipalResolver>) {
  app.decorateRequest('principal', null);
  return async function guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      const length = Number(request.headers['content-length']);
      if (length > request.routeOptions.bodyLimit)
        throw new TollgateError('request.body_too_large', 'Request body is too large');
      const auth = request.routeOptions.config.auth ?? 'none';
      if (auth === 'none') return;
      const principal = await resolvers[auth](request, singleAuthorization(request));
      request.principal = principal;
      if (principal.kind === 'key') request.log = reply.log = request.log.child({ key: keyLogId(principal.key.hash) });
    } catch (error) {
      if (announcesBody(request)) reply.header('connection', 'close');
      throw error;
    }
  };
}

/** The key the route's `auth` declaration authenticated. */
export function requestKey(request: FastifyRequest): KeyRecord {
  const principal = request.principal;
  // Only reachable through a route declared without key authentication: a bug, not the caller's fault.
  if (principal?.kind !== 'key')
    throw new Error(`route ${request.routeOptions.url ?? '?'} reads a key it did not declare`);
  return principal.key;
}

/** The account holder the route's `account`/`account-any`/`session` declaration authenticated. */
export function requestAccount(request: FastifyRequest): {
  accountId: string;
  via: 'session' | 'management_key';
  sessionId?: string;
} {
  const principal = request.principal;
  if (principal?.kind === 'key') return { accountId: principal.key.accountId, via: 'management_key' };
  if (principal?.kind === 'session')
    return { accountId: principal.accountId, via: 'session', sessionId: principal.active.session.id };
  throw new Error(`route ${request.routeOptions.url ?? '?'} reads an account it did not declare`);
}

/** The session the route's `session` (or `account`, when signed in) declaration authenticated. */
export function requestSession(request: FastifyRequest): { active: ActiveSession; token: string } {
  const principal = request.principal;
  if (principal?.kind !== 'session')
    throw new Error(`route ${request.routeOptions.url ?? '?'} reads a session it did not declare`);
  return { active: principal.active, token: principal.token };
}

/** Private answers are never stored by a cache; no JSON answer is content-sniffed. */
export function registerResponseHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    const config = request.routeOptions.config;
    if (
      (config.noStore === true || (config.auth !== undefined && config.auth !== 'none')) &&
      !reply.hasHeader('cache-control')
    )
      reply.header('cache-control', 'no-store');
    return payload;
  });
}
