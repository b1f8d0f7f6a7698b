/**
 * The session cookie: HttpOnly (scripts never see it), SameSite=Lax (not sent on cross-site
 * subrequests and form posts), Path=/ (the dashboard and the API share it). Over HTTPS (Fastify's
 * `request.protocol` believes `X-Forwarded-Proto` only with `server.trust_proxy`) it is Secure and
 * named `__Host-tg_session`: a browser keeps such a cookie only from this very host, Secure, Path=/
 * and without Domain, so a sibling subdomain cannot plant a session of its own choosing in front of
 * ours (cookie tossing: the first cookie of a name wins); only that name is read there. Over plain
 * HTTP (a browser refuses prefixed cookies without Secure) it is `tg_session`. No Max-Age beyond the
 * session's own end.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export const SESSION_COOKIE = 'tg_session';
export const SECURE_SESSION_COOKIE = '__Host-tg_session';

function cookieName(request: FastifyRequest): string {
  return request.protocol === 'https' ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/** The cookie's value from the Cookie header, or undefined (first occurrence wins, as browsers send the most specific first). */
export function readSessionCookie(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const name = cookieName(request);
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function attributes(request: FastifyRequest): string {
  return `Path=/; HttpOnly; SameSite=Lax${request.protocol === 'https' ? '; Secure' : ''}`;
}

/** `lifetimeMs`: the session's absolute lifetime from now (the browser forgets the cookie then; the server enforces it anyway). */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  lifetimeMs: number,
): void {
  const maxAge = Math.max(0, Math.floor(lifetimeMs / 1000));
  reply.header('set-cookie', `${cookieName(request)}=${token}; Max-Age=${maxAge}; ${attributes(request)}`);
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', `${cookieName(request)}=; Max-Age=0; ${attributes(request)}`);
}
