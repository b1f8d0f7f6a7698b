/** Signing in over HTTP as a browser would, and calling the API with the session cookie. */
import { expect } from 'vitest';
import { call, type CallOptions, type CallResult, type Method } from './api.js';
import type { TestGateway } from './gateway.js';

export interface BrowserSession {
  cookie: string;
  csrf: string;
}

let counter = 0;

export function uniqueEmail(prefix = 'holder'): string {
  return `${prefix}-${process.pid}-${++counter}-${Date.now()}@example.test`;
}

/** An account with a password, made by the operator through the admin API. */
export async function createHolder(
  gw: TestGateway,
  password = 'correct horse battery staple',
  credits = 10,
): Promise<{ id: string; email: string; password: string }> {
  const email = uniqueEmail();
  const created = await gw.admin('POST', '/accounts', { email, password });
  if (created.status !== 201) throw new Error(`account creation failed: ${JSON.stringify(created.json)}`);
  if (credits) await gw.admin('POST', `/accounts/${created.json.data.id}/credits`, { amount: credits, kind: 'grant' });
  return { id: created.json.data.id as string, email, password };
}

/** The `tg_session=<token>` (over HTTPS `__Host-tg_session=<token>`) pair of a Set-Cookie header. */
export function cookieOf(result: CallResult): string {
  const header = result.headers['set-cookie'];
  const text = Array.isArray(header) ? header[0]! : String(header);
  return text.split(';')[0]!;
}

export async function signIn(
  gw: TestGateway,
  email: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<BrowserSession> {
  const result = await call(gw, 'POST', '/session', { json: { email, password }, headers });
  expect(result.status, result.text).toBe(200);
  return { cookie: cookieOf(result), csrf: result.json.data.csrf_token };
}

/** A same-origin browser request: cookie, and for state-changing methods the CSRF header and our Origin. */
export function asBrowser(
  gw: TestGateway,
  session: BrowserSession,
  method: Method,
  path: string,
  options: CallOptions & { csrf?: string | null; origin?: string | null } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { cookie: session.cookie, ...options.headers };
  const csrf = options.csrf === undefined ? session.csrf : options.csrf;
  if (method !== 'GET' && csrf !== null) headers['x-csrf-token'] = csrf;
  const origin = options.origin === undefined ? (method === 'GET' ? null : gw.url) : options.origin;
  if (origin !== null) headers.origin = origin;
  const { csrf: _c, origin: _o, ...rest } = options;
  return call(gw, method, path, { ...rest, headers });
}
