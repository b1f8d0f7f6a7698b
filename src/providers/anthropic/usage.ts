import { countOrNull, isRecord } from '../json-shape.js';
import { usageOf, type NormalizedUsage } from '../types.js';

/**
 * Anthropic `usage` → ours. Anthropic's `input_tokens` excludes cached input: prompt-cache reads
 * and writes are counted apart, so all three add up to the prompt; cache reads are the cached part.
 */
export function parseAnthropicUsage(value: unknown): NormalizedUsage | null {
  if (!isRecord(value)) return null;
  const input = countOrNull(value.input_tokens);
  const output = countOrNull(value.output_tokens);
  if (input === null && output === null) return null;
  const cacheRead = countOrNull(value.cache_read_input_tokens);
  const cacheWrite = countOrNull(value.cache_creation_input_tokens);
  const prompt =
    input === null && cacheRead === null && cacheWrite === null
      ? null
      : (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  // Anthropic counts thinking inside output_tokens without a breakdown: no reasoning count.
  const usage = usageOf(prompt, output, null, cacheRead);
  if (cacheWrite !== null && cacheWrite > 0) {
    usage.cacheWriteTokens = cacheWrite;
    // Writes for an hour cost more (2× the input price, 1.25× for five minutes): their share, when said.
    const hour = isRecord(value.cache_creation) ? countOrNull(value.cache_creation.ephemeral_1h_input_tokens) : null;
    if (hour !== null && hour > 0) usage.cacheWrite1hTokens = Math.min(hour, cacheWrite);
  }
  return usage;
}

/**
 * A stream reports usage twice: `message_start` has the input side, `message_delta` the final
 * output count (and, from newer API versions, input counts again, or null). Later counts win; the
 * output count is `message_delta`'s only.
 */
export function mergeAnthropicUsage(start: Record<string, unknown>, delta: unknown): Record<string, unknown> {
  // `message_start`'s output count is a placeholder (1, or the tokens of a prefill): the output's real
  // count is `message_delta`'s alone, and without one it is unknown (estimated), never that placeholder.
  const { output_tokens: _placeholder, ...merged } = start;
  if (!isRecord(delta)) return merged;
  for (const [key, value] of Object.entries(delta)) if (countOrNull(value) !== null) merged[key] = value;
  return merged;
}
