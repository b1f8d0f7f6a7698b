/**
 * Who is the account holder behind a request to the account API: a management key
 * (`Authorization: Bearer`, exactly as before) or the dashboard's session cookie. A session-cookie
 * request that changes state (POST/PUT/PATCH/DELETE) must also pass the CSRF defence: its `Origin`,
 * when present, is the gateway's own, and `X-CSRF-Token` carries the session's token.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyKind } from '../auth/authenticator.js';
import { csrfTokenMatches, type ActiveSession } from '../auth/sessions.js';
import { TollgateError } from '../core/errors.js';
import { authenticate } from './authenticate.js';
import type { Services } from './services.js';
import { readSessionCookie } from './session-cookie.js';

export interface AccountCaller {
  accountId: string;
  via: 'session' | 'management_key';
  sessionId?: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** This gateway's origin as the browser sees it (Host, or X-Forwarded-Host/-Proto behind a trusted proxy). */
export function gatewayOrigin(request: FastifyRequest): string | null {
  try {
    return new URL(`${request.protocol}://${request.host}`).origin;
  } catch {
    return null;
  }
}

/**
 * Refuses a request whose `Origin` header names another origin (a page elsewhere posting to us with
 * the holder's cookie). Absent Origin passes: non-browser clients, and browsers on same-origin GETs.
 */
export function checkOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let given: string | null = null;
  try {
    given = origin === 'null' ? null : new URL(origin).origin;
  } catch {
    given = null;
  }
  const own = gatewayOrigin(request);
  if (given === null || own === null || given !== own) {
    // Behind a TLS-terminating proxy without `server.trust_proxy`, every browser request lands here: say so in the log.
    request.log.warn(
      { origin: origin.slice(0, 200), expected: own },
      'cross-origin request refused (behind a proxy? set server.trust_proxy so X-Forwarded-Proto/-Host count)',
    );
    throw new TollgateError('auth.csrf', 'Cross-origin request refused: Origin does not match this gateway');
  }
}

export function checkCsrf(request: FastifyRequest, token: string): void {
  checkOrigin(request);
  const given = request.headers['x-csrf-token'];
  if (!csrfTokenMatches(token, Array.isArray(given) ? given[0] : given))
    throw new TollgateError('auth.csrf', 'CSRF token missing or invalid');
}

/** The live session of the cookie (CSRF-checked for state-changing methods), or `auth.no_session`. */
export async function requireSession(
  services: Services,
  request: FastifyRequest,
): Promise<{ active: ActiveSession; token: string }> {
  // Already resolved (and CSRF-checked) by the route's `session` / `account` declaration.
  if (request.principal?.kind === 'session')
    return { active: request.principal.active, token: request.principal.token };
  const token = readSessionCookie(request);
  const active = await services.accountAuth.sessions.resolve(token);
  if (!SAFE_METHODS.has(request.method)) checkCsrf(request, token!);
  request.log = request.log.child({ session: active.session.id.slice(0, 12) });
  return { active, token: token! };
}

/**
 * A bearer key when the request carries one (`kind`: which keys may call the route), else the
 * session cookie, else 401 as without credentials.
 */
export async function authenticateAccount(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  kind: KeyKind = 'management',
): Promise<AccountCaller> {
  // Routes that declare `account`/`account-any` were authenticated by the route hook already.
  const principal = request.principal;
  if (principal?.kind === 'session')
    return { accountId: principal.accountId, via: 'session', sessionId: principal.active.session.id };
  if (principal?.kind === 'key') return { accountId: principal.key.accountId, via: 'management_key' };
  if (request.headers.authorization !== undefined || readSessionCookie(request) === undefined) {
    const key = await authenticate(services, request, reply, kind);
    return { accountId: key.accountId, via: 'management_key' };
  }
  const { active } = await requireSession(services, request);
  reply.log = request.log;
  return { accountId: active.session.accountId, via: 'session', sessionId: active.session.id };
}
