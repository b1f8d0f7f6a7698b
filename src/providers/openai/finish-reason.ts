/**
 * OpenRouter reports a normalized `finish_reason` (stop, length, tool_calls, content_filter, error)
 * and the provider's own value as `native_finish_reason`. OpenAI already uses the normalized names
 * except for the legacy `function_call`.
 *
 * Upstream values are untrusted: the normalized reason is stored in a TEXT column (PostgreSQL
 * refuses a NUL byte, which would fail the whole settle batch) and echoed to callers. So a value we
 * do not know passes through only when it is a short plain token (letters and `_`, ≤ 40); anything
 * else (control characters, spaces, punctuation, huge strings) becomes `error`: the upstream ended
 * in a way we cannot read. An empty string means no reason (null).
 */
const SAFE_TOKEN = /^[a-z_]{1,40}$/i;
const NATIVE_MAX = 100;

export function normalizeOpenAiFinishReason(raw: string | null): string | null {
  if (raw === 'function_call') return 'tool_calls';
  return safeFinishReason(raw);
}

/** An unknown upstream finish reason as it may be reported and stored (see above); shared by the adapters. */
export function safeFinishReason(raw: string | null): string | null {
  if (raw === null || raw === '') return null;
  return SAFE_TOKEN.test(raw) ? raw : 'error';
}

/**
 * The provider's own value, kept readable for `native_finish_reason`: control characters removed,
 * at most 100 characters; null when nothing is left.
 */
export function sanitizeNativeFinishReason(raw: string | null): string | null {
  if (raw === null) return null;
  // eslint-disable-next-line no-control-regex -- stripping control characters is the point
  const clean = raw.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '').trim();
  if (clean === '') return null;
  const chars = Array.from(clean); // code points: never split a surrogate pair
  return chars.length > NATIVE_MAX ? chars.slice(0, NATIVE_MAX).join('') : clean;
}
