/**
 * Which OAuth callback URLs an account holder may be sent back to (docs/api.md, OAuth PKCE): `https:`
 * anywhere, or `http:` on a loopback host (`localhost`, `127.0.0.1`, `[::1]`) at any port, the way
 * native and command-line apps receive their code. Anything else — other schemes (`javascript:`,
 * `data:`), credentials in the URL, fragments, over-long or unparsable text — is refused, so the
 * approval page can never be turned into an open redirect.
 */

const MAX_CALLBACK_URL_LENGTH = 2048;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export type CallbackUrlProblem = 'missing' | 'too_long' | 'unparsable' | 'scheme' | 'credentials' | 'fragment' | 'host';

export type CallbackUrlResult = { ok: true; url: URL } | { ok: false; problem: CallbackUrlProblem; message: string };

const MESSAGES: Record<CallbackUrlProblem, string> = {
  missing: 'callback_url is required',
  too_long: `callback_url must be at most ${MAX_CALLBACK_URL_LENGTH} characters`,
  unparsable: 'callback_url is not a valid absolute URL',
  scheme: 'callback_url must use https (or http on localhost, 127.0.0.1 or [::1])',
  credentials: 'callback_url must not contain a user name or password',
  fragment: 'callback_url must not contain a fragment (#)',
  host: 'callback_url must name a host',
};

function refuse(problem: CallbackUrlProblem): CallbackUrlResult {
  return { ok: false, problem, message: MESSAGES[problem] };
}

export function checkCallbackUrl(raw: unknown): CallbackUrlResult {
  if (typeof raw !== 'string' || raw.trim() === '') return refuse('missing');
  if (raw.length > MAX_CALLBACK_URL_LENGTH) return refuse('too_long');
  // Control characters and whitespace are never part of a URL a browser would follow as given.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f\\]/.test(raw)) return refuse('unparsable');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('unparsable');
  }
  if (
    url.username !== '' ||
    url.password !== '' ||
    raw.slice(0, raw.indexOf(url.host === '' ? '/' : url.host)).includes('@')
  ) {
    return refuse('credentials');
  }
  if (raw.includes('#')) return refuse('fragment');
  if (url.protocol === 'https:') return url.hostname === '' ? refuse('host') : { ok: true, url };
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? { ok: true, url } : refuse('scheme');
  return refuse('scheme');
}

/** The validated URL, or null. */
export function parseCallbackUrl(raw: unknown): URL | null {
  const result = checkCallbackUrl(raw);
  return result.ok ? result.url : null;
}

/** `callback_url` with `name=value` pairs added to its query (existing parameters kept). */
export function callbackWith(url: URL, params: Readonly<Record<string, string>>): string {
  const target = new URL(url.href);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  return target.href;
}

/** The app an OAuth callback identifies: its origin (what the holder is shown and what rankings count). */
export function appOriginOf(url: URL): string {
  return url.origin;
}
