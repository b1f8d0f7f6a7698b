/**
 * A tokenizer's count in bounded time. BPE cost grows quadratically on long runs without spaces
 * (32 KB of "a" takes ~0.6 s; 1 MB took minutes, on the event loop): texts are tokenized in bounded
 * slices, and a very long text is estimated from evenly spaced samples — its density of tokens per
 * character there, never below one token per three characters — so a hostile text costs bounded
 * time and a dense one (one token per character, or three) is not counted at a third of it.
 */

/** A tokenizer's own count of one text. */
export type RawTokenCount = (text: string) => number;

const SLICE_CHARS = 1024;
const TOKENIZE_UP_TO_CHARS = 32 * 1024;
const SAMPLE_SLICES = 16;
const CHARS_PER_TOKEN_FALLBACK = 3;

export function boundedTokenCount(text: string, countTokens: RawTokenCount): number {
  if (text.length > TOKENIZE_UP_TO_CHARS) return sampledCount(text, countTokens);
  let tokens = 0;
  for (let start = 0; start < text.length; start += SLICE_CHARS)
    tokens += countTokens(text.slice(start, start + SLICE_CHARS));
  return tokens;
}

function sampledCount(text: string, countTokens: RawTokenCount): number {
  const stride = Math.floor((text.length - SLICE_CHARS) / (SAMPLE_SLICES - 1));
  let tokens = 0;
  for (let i = 0; i < SAMPLE_SLICES; i++) {
    const start = i * stride;
    tokens += countTokens(text.slice(start, start + SLICE_CHARS));
  }
  const density = Math.ceil((tokens * text.length) / (SAMPLE_SLICES * SLICE_CHARS));
  return Math.max(density, Math.ceil(text.length / CHARS_PER_TOKEN_FALLBACK));
}
