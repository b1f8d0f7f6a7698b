/**
 * Gemini `finishReason` → OpenRouter's normalized finish reason; the raw value is kept as
 * `native_finish_reason`. Gemini reports STOP when it stops to call functions, so the caller
 * says whether the candidate carried a call. Gemini's other values all mean the answer ended
 * abnormally (unsupported language, a malformed call, "OTHER"): they map to "error".
 */
const CONTENT_FILTER = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);

export function normalizeGeminiFinishReason(raw: string | null, hasToolCalls: boolean): string | null {
  if (raw === null) return null;
  if (raw === 'STOP' || raw === 'FINISH_REASON_UNSPECIFIED') return hasToolCalls ? 'tool_calls' : 'stop';
  if (raw === 'MAX_TOKENS') return 'length';
  if (CONTENT_FILTER.has(raw)) return 'content_filter';
  return 'error';
}
