/**
 * OpenRouter reports a normalized `finish_reason` (stop, length, tool_calls, content_filter, error)
 * and the provider's own value as `native_finish_reason`. OpenAI already uses the normalized names
 * except for the legacy `function_call`; servers that speak its API in front of other models pass
 * their own on (TGI's `eos_token`, `end_turn` and `max_tokens` from Anthropic-backed ones, Gemini's
 * `STOP` / `MAX_TOKENS` / `SAFETY` through its compatibility layer, Mistral's `model_length`): those
 * are mapped too, in any case, so a client sees a cut answer as `length` (the AI SDK reads anything
 * it does not know as `other`).
 *
 * Upstream values are untrusted: the normalized reason is stored in a TEXT column (PostgreSQL
 * refuses a NUL byte, which would fail the whole settle batch) and echoed to callers. So a value we
 * do not know passes through only when it is a short plain token (letters and `_`, ≤ 40); anything
 * else (control characters, spaces, punctuation, huge strings) becomes `error`: the upstream ended
 * in a way we cannot read. An empty string means no reason (null).
 */
const SAFE_TOKEN = /^[a-z_]{1,40}$/i;
const NATIVE_MAX = 100;

/** Other names for the normalized reasons (lower case). */
const SYNONYMS: ReadonlyMap<string, string> = new Map([
  ['stop', 'stop'],
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['eos', 'stop'],
  ['eos_token', 'stop'],
  ['end_of_text', 'stop'],
  ['complete', 'stop'],
  ['length', 'length'],
  ['max_tokens', 'length'],
  ['model_length', 'length'],
  ['max_length', 'length'],
  ['max_output_tokens', 'length'],
  ['tool_calls', 'tool_calls'],
  ['function_call', 'tool_calls'],
  ['tool_use', 'tool_calls'],
  ['content_filter', 'content_filter'],
  ['safety', 'content_filter'],
  ['recitation', 'content_filter'],
  ['blocklist', 'content_filter'],
  ['prohibited_content', 'content_filter'],
  ['spii', 'content_filter'],
  ['refusal', 'content_filter'],
  // vLLM ends a request its engine aborted (shutdown, pause, scale-down) with HTTP 200, `abort` and
  // `[DONE]`: the answer was cut by the server, as an `error` finish says.
  ['abort', 'error'],
]);

export function normalizeOpenAiFinishReason(raw: string | null): string | null {
  if (raw === null) return null;
  return SYNONYMS.get(raw.toLowerCase()) ?? safeFinishReason(raw);
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
