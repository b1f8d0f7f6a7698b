/**
 * Token estimates, for when an upstream reports no usage (or a stream was cut) and for holds.
 * gpt-tokenizer's o200k encoding is an approximation for non-OpenAI models; the generation record
 * says when its counts are estimates.
 */
import { countTokens } from 'gpt-tokenizer';

const PER_MESSAGE_OVERHEAD = 4;
// Caller text may contain special-token strings ("<|endoftext|>"): count them as text, never throw.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const count = (text: string) => countTokens(text, AS_TEXT);
const PER_REQUEST_OVERHEAD = 3;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .join('\n');
  }
  return '';
}

export function estimatePromptTokens(messages: readonly Record<string, unknown>[], tools?: unknown): number {
  let total = PER_REQUEST_OVERHEAD;
  for (const message of messages) {
    total += PER_MESSAGE_OVERHEAD + count(textOf(message.content));
    if (message.tool_calls) total += count(JSON.stringify(message.tool_calls));
  }
  if (tools) total += count(JSON.stringify(tools));
  return total;
}

export function estimateCompletionTokens(text: string): number {
  return text.length === 0 ? 0 : count(text);
}
