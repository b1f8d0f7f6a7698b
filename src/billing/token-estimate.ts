/**
 * Token estimates, for when an upstream reports no usage (or a stream was cut) and for holds.
 * gpt-tokenizer's o200k encoding is an approximation for non-OpenAI models; the generation record
 * says when its counts are estimates.
 */
import { countTokens } from 'gpt-tokenizer';
import { likelyMediaTokens, mediaTokens } from './media-token-estimate.js';
import { boundedTokenCount, boundedTokenRange, type TokenRange } from '../core/token-count.js';

const PER_MESSAGE_OVERHEAD = 4;
// Caller text may contain special-token strings ("<|endoftext|>"): count them as text, never throw.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const tokenizer = (text: string) => countTokens(text, AS_TEXT);

/** In bounded time (`core/token-count.ts`): a hostile prompt is estimated, not tokenized whole. */
function count(text: string): number {
  return boundedTokenCount(text, tokenizer);
}
const PER_REQUEST_OVERHEAD = 3;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join('\n');
  }
  return '';
}

/**
 * What the request sends beside its messages that a provider reads, and bills, as prompt: tool
 * definitions, a forced tool choice, a structured-output schema. Each is counted as its JSON text.
 */
export interface PromptExtras {
  tools?: unknown;
  tool_choice?: unknown;
  response_format?: unknown;
  /** The legacy forms of `tools` and `tool_choice`, still accepted and forwarded. */
  functions?: unknown;
  function_call?: unknown;
}

export function estimatePromptTokens(messages: readonly Record<string, unknown>[], extras: PromptExtras = {}): number {
  return estimatePromptTokenRange(messages, extras).upper;
}

/**
 * The prompt as an upper bound (`upper`: holds, capacity) and as its likely size (`likely`: what the
 * context has left for the completion). The likely figure counts long texts at their sampled density
 * and media parts at half their generous counts: a prompt it puts past the context is the provider's
 * to refuse, and one that fits must not be sent with a completion limit of one token.
 */
export function estimatePromptTokenRange(
  messages: readonly Record<string, unknown>[],
  extras: PromptExtras = {},
): TokenRange {
  let upper = PER_REQUEST_OVERHEAD;
  let likely = PER_REQUEST_OVERHEAD;
  const add = (text: string) => {
    const range = boundedTokenRange(text, tokenizer);
    upper += range.upper;
    likely += range.likely;
  };
  for (const message of messages) {
    upper += PER_MESSAGE_OVERHEAD;
    likely += PER_MESSAGE_OVERHEAD;
    add(textOf(message.content));
    // Images, audio and files at a fixed generous count each: invisible to the tokenizer, never free.
    upper += mediaTokens(message.content);
    likely += likelyMediaTokens(message.content);
    if (message.tool_calls) add(JSON.stringify(message.tool_calls));
    if (message.function_call) add(JSON.stringify(message.function_call));
    if (typeof message.name === 'string') add(message.name);
    if (typeof message.tool_call_id === 'string') add(message.tool_call_id);
  }
  // Words alone (`tool_choice: "auto"`, `response_format: "text"`) are the request's framing, not text.
  for (const extra of [
    extras.tools,
    extras.tool_choice,
    extras.response_format,
    extras.functions,
    extras.function_call,
  ])
    if (extra && typeof extra === 'object') add(JSON.stringify(extra));
  return { upper, likely };
}

/**
 * Fields no schema here knows, which an endpoint may be sent and read as prompt (vLLM's `documents`,
 * rendered into the prompt by a RAG chat template), each counted as its JSON text: what the hold adds
 * for them. Only the hold: an endpoint that does not list such a field is never sent it, so neither
 * the completion's room nor a charge at our estimate counts them.
 */
export function unknownFieldTokens(values: readonly unknown[]): number {
  let tokens = 0;
  for (const value of values) {
    const text = typeof value === 'string' ? value : value && typeof value === 'object' ? JSON.stringify(value) : '';
    if (text !== '') tokens += boundedTokenRange(text, tokenizer).upper;
  }
  return tokens;
}

/** Prompt tokens a provider may add to a text prompt beyond our count: its chat template, a tool-use system prompt. */
export const PROVIDER_PROMPT_ALLOWANCE = 8192;

/**
 * The most prompt tokens a provider's count is charged for this request, or null when it carries
 * media (an image, a recording, a document: what they cost can be anything up to the context).
 * A token covers at least one byte of the text a model reads (byte-level tokenizers, and SentencePiece
 * with byte fallback), so the prompt's bytes as sent — every message whole (tool calls, legacy
 * `function_call`s, reasoning sent back) and every other field of the request (`extras`: the tool and
 * function definitions, the response format, and whatever an endpoint is sent that it may read as
 * prompt, such as vLLM's `documents`) — bound any tokenizer's count; plus what a provider adds to
 * every prompt (its chat template, a tool-use system prompt). A count past it is a provider's bug, not the caller's prompt:
 * reporting 32,000 prompt tokens for 13 charged the caller some 2,400 times the prompt (outside
 * check). A multiple of our own count would not do: an older tokenizer needs 8 times o200k's tokens
 * for Telugu (outside re-check).
 */
export function promptCeilingOf(
  messages: readonly Record<string, unknown>[],
  extras: Readonly<Record<string, unknown>> = {},
): number | null {
  let bytes = 0;
  for (const message of messages) {
    if (mediaTokens(message.content) > 0) return null;
    bytes += Buffer.byteLength(JSON.stringify(message));
  }
  for (const value of Object.values(extras))
    if (value !== undefined && value !== null) bytes += Buffer.byteLength(JSON.stringify(value));
  return bytes + PROVIDER_PROMPT_ALLOWANCE;
}

export function estimateCompletionTokens(text: string): number {
  return text.length === 0 ? 0 : count(text);
}
