import { countOrNull, isRecord } from '../json-shape.js';
import type { NormalizedUsage } from '../types.js';

/**
 * Gemini `usageMetadata` → ours. Thinking tokens are billed as output but reported apart from
 * `candidatesTokenCount`, so they are added to the completion and reported as reasoning; tokens of
 * tool results Gemini fetched itself (`toolUsePromptTokenCount`) are billed as input. Gemini's JSON
 * leaves out fields whose value is zero (proto3): a count missing beside others is 0, not unknown.
 */
export function parseGeminiUsage(value: unknown): NormalizedUsage | null {
  if (!isRecord(value)) return null;
  const prompt = countOrNull(value.promptTokenCount);
  const candidates = countOrNull(value.candidatesTokenCount);
  const thoughts = countOrNull(value.thoughtsTokenCount);
  if (prompt === null && candidates === null && thoughts === null) return null;
  return {
    promptTokens: (prompt ?? 0) + (countOrNull(value.toolUsePromptTokenCount) ?? 0),
    completionTokens: (candidates ?? 0) + (thoughts ?? 0),
    reasoningTokens: thoughts,
    cachedTokens: countOrNull(value.cachedContentTokenCount),
  };
}
