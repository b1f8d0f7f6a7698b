/**
 * The one way the dashboard talks to the gateway: same-origin JSON under /api/v1 with the session
 * cookie, the CSRF token on every mutation, and every failure turned into an ApiError carrying the
 * error record's own message, so pages can show it in words.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

let csrfToken: string | null = null;
let onSignedOut: (() => void) | null = null;
let refreshCsrf: (() => Promise<string | null>) | null = null;

/** The token from the session answer; sent as X-CSRF-Token on POST/PATCH/DELETE. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when an API call answers 401: the session ended (expired, or signed out elsewhere). */
export function setSignedOutHandler(handler: (() => void) | null): void {
  onSignedOut = handler;
}

function messageOf(json: unknown, response: Response): string {
  if (typeof json === 'object' && json !== null && 'error' in json) {
    const error = (json as { error?: { message?: unknown } }).error;
    if (typeof error?.message === 'string' && error.message !== '') return error.message;
  }
  return `The gateway answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
}

/**
 * How a mutation refused for its CSRF token gets a current one: signing in again in another tab
 * replaces the session, and with it the token this page holds. Answers the new token, or null when
 * this page's session is gone (then the handler has already said so).
 */
export function setCsrfRefresher(refresher: (() => Promise<string | null>) | null): void {
  refreshCsrf = refresher;
}

export interface RequestOptions {
  /** Do not treat a 401 as "the session ended" (the session probe and sign-in itself). */
  quiet401?: boolean;
  /** A retry after a refreshed CSRF token: not refreshed again. */
  retried?: boolean;
}

export async function api<T>(method: Method, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const sentToken = method === 'GET' ? null : csrfToken;
  if (sentToken) headers['x-csrf-token'] = sentToken;
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'The gateway could not be reached. Check the connection and try again.');
  }
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    json = null;
  }
  if (response.status === 403 && sentToken !== null && !options.retried && refreshCsrf) {
    // A stale token (the session was replaced in another tab): once more with the current one.
    const fresh = await refreshCsrf().catch(() => null);
    if (fresh !== null && fresh !== sentToken) return api<T>(method, path, body, { ...options, retried: true });
  }
  if (!response.ok) {
    const retryAfter = Number(response.headers.get('retry-after'));
    if (response.status === 401 && !options.quiet401) onSignedOut?.();
    throw new ApiError(
      response.status,
      messageOf(json, response),
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
    );
  }
  if (json === null) throw new ApiError(response.status, `The gateway answered ${response.status} without a JSON body`);
  return json as T;
}

/** A query string from the defined values only. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
