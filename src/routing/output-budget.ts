/**
 * What an upstream generated, and a stop for one that writes far past the completion limit it was
 * sent (it ignores `max_tokens`). The caller is never charged past that limit (pipeline/generation.ts),
 * but without a stop such a provider streams on at the operator's expense until a timeout. The reader
 * (stream-reader.ts) cuts the stream once our count of its answer (reasoning aside) passes twice the limit plus 64
 * tokens — far enough past it that a provider whose tokenizer counts fewer tokens than ours is never
 * cut while it keeps to the limit — and ends the answer as a provider that honours the limit would:
 * `finish_reason: "length"`.
 *
 * Reasoning has a bound of its own, as all the text does: no honest model writes more than its
 * context window holds, and MAX_CHARS_PER_TOKEN characters a token is more than any tokenizer's
 * longest. An upstream that thinks on without end (a reasoning delta every few ms) was kept in
 * memory, all of it, until the process ran out of heap or of string length and died with every
 * request in it (outside check); it is cut there, with or without a completion limit.
 */
import type { ChunkChoice } from '../providers/types.js';

/** Everything the upstream generated in a message or delta — text, reasoning, refusal, tool calls — for a token count. */
export function generatedText(part: Record<string, unknown>): string {
  return textOf(part, ALL_TEXT);
}

const ALL_TEXT = ['content', 'reasoning', 'refusal'] as const;
const ANSWER_TEXT = ['content', 'refusal'] as const;

function textOf(part: Record<string, unknown>, fields: readonly string[]): string {
  let text = '';
  for (const field of fields) if (typeof part[field] === 'string') text += part[field];
  if (Array.isArray(part.tool_calls)) {
    for (const call of part.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[]) {
      if (typeof call.function?.name === 'string') text += call.function.name;
      if (typeof call.function?.arguments === 'string') text += call.function.arguments;
    }
  }
  return text;
}

/**
 * Everything a delta carries, in UTF-16 code units (its role aside): strings by length, anything else
 * — `reasoning_details` items with their signatures, tool calls with their ids, images, annotations,
 * fields no one named yet — by its JSON size. What is relayed or kept is counted, whatever its field:
 * an upstream thinking without end in `reasoning`, then in `reasoning_details`, then in a signature
 * field, each grew the process to gigabytes (outside checks).
 */
function deltaSize(delta: Readonly<Record<string, unknown>>): number {
  let size = 0;
  for (const field in delta) {
    if (field === 'role') continue;
    const value = delta[field];
    if (typeof value === 'string') size += value.length;
    else if (typeof value === 'object' && value !== null) size += JSON.stringify(value).length;
  }
  return size;
}

/** A typical English density, for the text read before counting began (see `add`). */
const CHARS_PER_TOKEN = 4;
/** Generous: a run of spaces or repeated characters can be one long token. */
const MAX_CHARS_PER_TOKEN = 16;
/** The bound on all generated text is never below this many characters (a small or unknown window). */
const MIN_GENERATED_CHARS = 1 << 20;

export class OutputBudget {
  /** Output read so far, in UTF-16 code units. */
  private chars = 0;
  /** Our token count of the output, once counting began. */
  private tokens = 0;
  /** Everything generated so far, reasoning included, in UTF-16 code units. */
  private generated = 0;
  /** Past this many tokens of answer the stream is cut (Infinity: no completion limit). */
  readonly cutAt: number;
  /** Past this many characters of everything generated the stream is cut. */
  readonly maxGeneratedChars: number;

  constructor(
    limit: number | null,
    private readonly countTokens: (text: string) => number,
    /** The endpoint's context window in tokens (what any answer, its reasoning included, fits in). */
    contextLength: number | null = null,
  ) {
    this.cutAt = limit === null ? Infinity : 2 * limit + 64;
    this.maxGeneratedChars = Math.max(
      MIN_GENERATED_CHARS,
      MAX_CHARS_PER_TOKEN * Math.max(contextLength ?? 0, limit ?? 0),
    );
  }

  /**
   * Adds one chunk's output; true once the output is past the cut point. Counting costs a tokenizer
   * call per event, so it begins only when the output could be past it: our tokenizer gives a token
   * at least one UTF-8 byte, at most three per UTF-16 unit, so below a third of the cut point in code
   * units nothing is counted (an ordinary answer never is). The text before counting began is taken
   * at four characters a token, which only delays the cut for denser text.
   */
  add(event: { readonly choices: readonly ChunkChoice[] }): boolean {
    for (const choice of event.choices) {
      this.generated += deltaSize(choice.delta);
      // Not the reasoning: some providers' limits cover only the answer (DeepSeek's first reasoner API
      // streamed up to 32K tokens of it past `max_tokens`), and an honest one must not be stopped mid-thought.
      const text = textOf(choice.delta, ANSWER_TEXT);
      if (text.length === 0 || this.cutAt === Infinity) continue;
      const before = this.chars;
      this.chars += text.length;
      if (3 * this.chars <= this.cutAt) continue;
      if (3 * before <= this.cutAt) this.tokens += Math.ceil(before / CHARS_PER_TOKEN);
      this.tokens += this.countTokens(text);
    }
    return this.tokens > this.cutAt || this.generated > this.maxGeneratedChars;
  }
}

/**
 * The completion limit an attempt's body carries (`max_completion_tokens` / `max_tokens`, set to one
 * value by pipeline/upstream-parameters.ts; the larger when a body carries two), or null.
 */
export function completionLimitOf(body: Readonly<Record<string, unknown>>): number | null {
  let limit: number | null = null;
  for (const field of ['max_completion_tokens', 'max_tokens'] as const) {
    const value = body[field];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && (limit === null || value > limit))
      limit = value;
  }
  return limit;
}
