/**
 * The headers a BYOK attempt sends: an allowlist per provider API, not a denylist. The operator's
 * configured extra headers (organisation and project ids, gateway tokens, custom auth schemes) belong
 * to the operator's account and never travel with an account holder's own key; only the body's type,
 * what we accept, the adapter's own auth header (carrying the account's key) and the API's required
 * version header do.
 */
import type { ProviderKind } from '../providers/types.js';

const OPENAI = new Set(['content-type', 'accept', 'accept-encoding', 'authorization']);

export const BYOK_HEADERS: Readonly<Record<ProviderKind, ReadonlySet<string>>> = {
  openai: OPENAI,
  demo: OPENAI,
  anthropic: new Set(['content-type', 'accept', 'accept-encoding', 'x-api-key', 'anthropic-version']),
  gemini: new Set(['content-type', 'accept', 'accept-encoding', 'x-goog-api-key']),
};

export function byokHeaders(headers: Readonly<Record<string, string>>, kind: ProviderKind): Record<string, string> {
  const allowed = BYOK_HEADERS[kind];
  return Object.fromEntries(Object.entries(headers).filter(([name]) => allowed.has(name.toLowerCase())));
}
