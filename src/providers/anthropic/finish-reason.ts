/**
 * Anthropic `stop_reason` → OpenRouter's normalized finish reason; the raw value is kept as
 * `native_finish_reason`. Values we do not know pass through unchanged, as for OpenAI.
 */
const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop', // a server-tool loop paused; the turn is over for this request
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function normalizeAnthropicStopReason(raw: string | null): string | null {
  if (raw === null) return null;
  return FINISH_REASONS[raw] ?? raw;
}
