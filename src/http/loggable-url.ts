/**
 * The request URL as the access log writes it: query parameters that carry a secret (a password-reset
 * token in the link a mail sent, an OAuth code or verifier, a key) keep their name, lose their value.
 */
const SECRET_PARAMETERS = new Set([
  'token',
  'code',
  'code_verifier',
  'key',
  'api_key',
  'access_token',
  'refresh_token',
  'secret',
  'password',
]);

export function loggableUrl(url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const params = new URLSearchParams(url.slice(query + 1));
  let redacted = false;
  for (const name of new Set(params.keys())) {
    if (!SECRET_PARAMETERS.has(name.toLowerCase())) continue;
    params.set(name, '[redacted]');
    redacted = true;
  }
  return redacted ? `${url.slice(0, query)}?${params.toString()}` : url;
}
