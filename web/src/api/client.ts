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

export interface RequestOptions {
  /** Do not treat a 401 as "the session ended" (the session probe and sign-in itself). */
  quiet401?: boolean;
}

export async function api<T>(method: Method, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
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
