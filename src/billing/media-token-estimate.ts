/**
 * Prompt tokens of non-text content parts, for holds. Our tokenizer cannot see an image, a sound or a
 * PDF, and counting them as nothing let a request hold far less than it cost. Each part counts a fixed,
 * generous number of tokens (README "The overspend bound"):
 * - images (`image_url`): 2,048 — above what OpenAI (≤ ~1,500 at high detail), Anthropic (≤ ~1,600)
 *   and Gemini (258 per tile) charge for one image;
 * - audio (`input_audio`): 8,192 — several minutes of speech at the rates audio models charge;
 * - files and any other non-text part: 16,384 — a document of a few dozen pages.
 * A longer recording or document still costs more than held; that difference is the bound's
 * "real cost − estimate" term.
 */
export const IMAGE_PART_TOKENS = 2048;
export const AUDIO_PART_TOKENS = 8192;
export const OTHER_PART_TOKENS = 16_384;

function partTokens(part: unknown): number {
  if (part === null || typeof part !== 'object') return 0;
  const type = (part as { type?: unknown }).type;
  if (type === 'text') return 0;
  if (type === 'image_url' || type === 'image' || type === 'input_image') return IMAGE_PART_TOKENS;
  if (type === 'input_audio' || type === 'audio') return AUDIO_PART_TOKENS;
  return OTHER_PART_TOKENS;
}

/** The non-text parts of a message's content, at their fixed counts (a string content has none). */
export function mediaTokens(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as unknown[]) total += partTokens(part);
  return total;
}

/**
 * Their likely size, for the context a prompt leaves (billing/token-estimate.ts): half the generous
 * count — 1,024 per image, about what one costs at high detail — so a prompt with media is not sent
 * with a completion limit that, with the media's real tokens, passes the context.
 */
export function likelyMediaTokens(content: unknown): number {
  return Math.floor(mediaTokens(content) / 2);
}
