/**
 * A tokenizer's count in bounded time. BPE cost grows quadratically on long runs without spaces
 * (32 KB of "a" takes ~0.6 s; 1 MB took minutes, on the event loop): texts are tokenized in bounded
 * slices, and a very long text is estimated from evenly spaced samples — its density of tokens per
 * character there, never below one token per three characters — so a hostile text costs bounded
 * time and a dense one (one token per character, or three) is not counted at a third of it.
 *
 * That floor makes the count an upper bound for holds, and ordinary prose (~4.5 characters per token)
 * is counted half again too high: the *likely* count, the samples' density alone, is what decides how
 * much of a context a prompt leaves (billing/completion-budget.ts), so a prompt that fits is not
 * answered in one token.
 */

/** A tokenizer's own count of one text. */
export type RawTokenCount = (text: string) => number;

const SLICE_CHARS = 1024;
const TOKENIZE_UP_TO_CHARS = 32 * 1024;
const SAMPLE_SLICES = 16;
const CHARS_PER_TOKEN_FALLBACK = 3;

/** A count as an upper bound (holds) and as the likely figure (the context a prompt leaves). */
export interface TokenRange {
  upper: number;
  likely: number;
}

export function boundedTokenCount(text: string, countTokens: RawTokenCount): number {
  return boundedTokenRange(text, countTokens).upper;
}

export function boundedTokenRange(text: string, countTokens: RawTokenCount): TokenRange {
  if (text.length > TOKENIZE_UP_TO_CHARS) return sampledCount(text, countTokens);
  let tokens = 0;
  for (let start = 0; start < text.length; start += SLICE_CHARS)
    tokens += countTokens(text.slice(start, start + SLICE_CHARS));
  return { upper: tokens, likely: tokens };
}

function sampledCount(text: string, countTokens: RawTokenCount): TokenRange {
  const stride = Math.floor((text.length - SLICE_CHARS) / (SAMPLE_SLICES - 1));
  let tokens = 0;
  for (let i = 0; i < SAMPLE_SLICES; i++) {
    const start = i * stride;
    tokens += countTokens(text.slice(start, start + SLICE_CHARS));
  }
  const density = Math.ceil((tokens * text.length) / (SAMPLE_SLICES * SLICE_CHARS));
  return { upper: Math.max(density, Math.ceil(text.length / CHARS_PER_TOKEN_FALLBACK)), likely: density };
}
