/**
 * OpenRouter reports a normalized `finish_reason` (stop, length, tool_calls, content_filter, error)
 * and the provider's own value as `native_finish_reason`. OpenAI already uses the normalized names
 * except for the legacy `function_call`; values we do not know pass through unchanged.
 */
export function normalizeOpenAiFinishReason(raw: string | null): string | null {
  return raw === 'function_call' ? 'tool_calls' : raw;
}
