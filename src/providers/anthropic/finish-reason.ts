/**
 * Anthropic `stop_reason` → OpenRouter's normalized finish reason; the raw value is kept as
 * `native_finish_reason`. Values we do not know pass through when they are short plain tokens, else
 * become `error`, as for OpenAI (`safeFinishReason`).
 */
import { safeFinishReason } from '../openai/finish-reason.js';

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
  return (Object.hasOwn(FINISH_REASONS, raw) ? FINISH_REASONS[raw] : undefined) ?? safeFinishReason(raw);
}
