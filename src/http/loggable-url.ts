/**
 * The request URL as the access log writes it: query parameters that carry a secret (a password-reset
 * token in the link a mail sent, an OAuth code, verifier or challenge, a key) keep their name, lose their value;
 * and anything shaped like a Tollgate key is cut out wherever it sits (a key pasted into the path, or
 * under a parameter name not listed here).
 */
import { redactKeys } from '../auth/key-format.js';
const SECRET_PARAMETERS = new Set([
  'token',
  'code',
  'codeverifier',
  // With the `plain` method the challenge is the verifier itself.
  'codechallenge',
  'key',
  'apikey',
  'accesstoken',
  'refreshtoken',
  'idtoken',
  'secret',
  'clientsecret',
  'password',
  'auth',
  'authorization',
]);

/** `api_key`, `apiKey`, `API-KEY` and `api.key` are one name. */
function normalised(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

export function loggableUrl(url: string): string {
  const unkeyed = redactKeys(url);
  const query = unkeyed.indexOf('?');
  if (query === -1) return unkeyed;
  const params = new URLSearchParams(unkeyed.slice(query + 1));
  let redacted = false;
  for (const name of new Set(params.keys())) {
    if (!SECRET_PARAMETERS.has(normalised(name))) continue;
    params.set(name, '[redacted]');
    redacted = true;
  }
  return redacted ? `${unkeyed.slice(0, query)}?${params.toString()}` : unkeyed;
}
