import { countOrNull, isRecord } from '../json-shape.js';
import { usageOf, type NormalizedUsage } from '../types.js';

/** OpenAI `usage` → ours. Absent or unreadable usage is null, so the caller can estimate instead. */
export function parseOpenAiUsage(value: unknown): NormalizedUsage | null {
  if (!isRecord(value)) return null;
  const promptTokens = countOrNull(value.prompt_tokens);
  const completionTokens = countOrNull(value.completion_tokens);
  if (promptTokens === null && completionTokens === null) return null;
  const completionDetails = isRecord(value.completion_tokens_details) ? value.completion_tokens_details : null;
  const promptDetails = isRecord(value.prompt_tokens_details) ? value.prompt_tokens_details : null;
  return usageOf(
    promptTokens,
    completionTokens,
    countOrNull(completionDetails?.reasoning_tokens),
    countOrNull(promptDetails?.cached_tokens),
  );
}
