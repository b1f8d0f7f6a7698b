/**
 * The mock's generated text and token counts. Text is a fixed sentence cycled word by word, so tests
 * can assert content without knowing the prompt; each word (with its leading space) counts as one
 * completion token and is sent as one stream chunk.
 */

export const MOCK_SENTENCE = 'The quick brown fox jumps over the lazy dog.';
const WORDS = MOCK_SENTENCE.split(' ');

/** Used when neither the script nor the request bounds the length. */
export const DEFAULT_COMPLETION_TOKENS = 40;

/** The first `count` pieces of the cycled sentence: "The", " quick", ... " dog.", " The", ... */
export function mockPieces(count: number): string[] {
  const pieces: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) pieces[i] = (i === 0 ? '' : ' ') + WORDS[i % WORDS.length]!;
  return pieces;
}

/** The mock's completion text for `count` tokens, as a non-streamed response would carry it. */
export function mockCompletionText(count: number): string {
  return mockPieces(count).join('');
}

/** Scripted content split into word pieces that concatenate back to the exact text. */
export function splitContent(content: string): string[] {
  return content.match(/\s*\S+|\s+$/g) ?? [];
}

export interface PlannedCompletion {
  pieces: string[];
  finishReason: 'stop' | 'length';
}

/**
 * How much to generate: the scripted count, else the content's length, else 40 — cut to the
 * request's `max_completion_tokens`/`max_tokens`, which makes the finish reason `length` — and ended
 * before the first of the request's `stop` sequences, as OpenAI does (the sequence itself is not
 * sent; the finish reason is `stop`).
 */
export function planCompletion(
  script: { completionTokens: number | null; content: string | null },
  maxTokens: number | null,
  stop: readonly string[] = [],
): PlannedCompletion {
  const contentPieces = script.content === null ? null : splitContent(script.content);
  let wanted = script.completionTokens ?? contentPieces?.length ?? DEFAULT_COMPLETION_TOKENS;
  if (contentPieces !== null) wanted = Math.min(wanted, contentPieces.length);
  wanted = Math.floor(wanted);
  const produced = maxTokens === null ? wanted : Math.min(wanted, maxTokens);
  const pieces = contentPieces === null ? mockPieces(produced) : contentPieces.slice(0, produced);
  const stopped = cutAtStop(pieces, stop);
  if (stopped !== null) return { pieces: stopped, finishReason: 'stop' };
  return { pieces, finishReason: produced < wanted ? 'length' : 'stop' };
}

/** The pieces up to the first stop sequence in their text (the piece it starts in cut short), or null without one. */
function cutAtStop(pieces: readonly string[], stop: readonly string[]): string[] | null {
  const text = pieces.join('');
  let at = -1;
  for (const sequence of stop) {
    const found = sequence === '' ? -1 : text.indexOf(sequence);
    if (found !== -1 && (at === -1 || found < at)) at = found;
  }
  if (at === -1) return null;
  const kept: string[] = [];
  let offset = 0;
  for (const piece of pieces) {
    if (offset + piece.length > at) {
      if (at > offset) kept.push(piece.slice(0, at - offset));
      break;
    }
    kept.push(piece);
    offset += piece.length;
  }
  return kept;
}

/** A request's `stop`: one string or a list of them (anything else stops nothing). */
export function stopSequencesOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

export type CountTokens = (text: string) => number;

/**
 * OpenAI's accounting for chat prompts: 3 tokens per message, the text of its content (string or
 * text parts) and `name` (+1), and 3 to prime the reply. Other message fields are not counted.
 */
export function countPromptTokens(messages: readonly unknown[], countTokens: CountTokens): number {
  let total = 3;
  for (const message of messages) {
    total += 3;
    if (typeof message !== 'object' || message === null) continue;
    const { content, name } = message as { content?: unknown; name?: unknown };
    if (typeof content === 'string') total += countTokens(content);
    else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof text === 'string') total += countTokens(text);
      }
    }
    if (typeof name === 'string') total += 1 + countTokens(name);
  }
  return total;
}
