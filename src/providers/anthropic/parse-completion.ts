import { isRecord, stringOrNull } from '../json-shape.js';
import type { NormalizedCompletion } from '../types.js';
import { normalizeAnthropicStopReason } from './finish-reason.js';
import { redactedDetail, thinkingDetail } from './reasoning.js';
import { parseAnthropicUsage } from './usage.js';

type Malformed = { kind: 'malformed'; reason: string };

export interface AnswerOptions {
  /** The caller asked for reasoning without seeing it (`reasoning.exclude`): no `reasoning`, no `reasoning_details`. */
  excludeReasoning?: boolean;
}

/**
 * A non-streamed Anthropic Message → one OpenAI-format choice; anything off-shape is malformed.
 * Thinking is given twice, as OpenRouter does: its text joined as `reasoning`, and each thinking or
 * redacted_thinking block as one `reasoning_details` item (reasoning.ts), numbered from 0 in order.
 */
export function parseAnthropicMessage(json: unknown, options: AnswerOptions = {}): NormalizedCompletion | Malformed {
  if (!isRecord(json)) return malformed('response body is not a JSON object');
  if (json.type === 'error' || isRecord(json.error)) {
    const message = isRecord(json.error) ? stringOrNull(json.error.message) : null;
    return malformed(`response carries an error: ${message ?? 'no message'}`);
  }
  if (!Array.isArray(json.content)) return malformed('response has no content array');
  let text = '';
  let reasoning = '';
  const details: Record<string, unknown>[] = [];
  const toolCalls: Record<string, unknown>[] = [];
  for (const [position, block] of json.content.entries()) {
    if (!isRecord(block)) return malformed(`content[${position}] is not an object`);
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      reasoning += block.thinking;
      details.push(thinkingDetail(block.thinking, stringOrNull(block.signature), details.length));
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string')
      details.push(redactedDetail(block.data, details.length));
    else if (block.type === 'tool_use') {
      const name = stringOrNull(block.name);
      if (name === null) return malformed(`content[${position}] is a tool_use without a name`);
      const input = isRecord(block.input) ? block.input : {};
      toolCalls.push({
        id: stringOrNull(block.id) ?? `toolu_${position}`,
        type: 'function',
        function: { name, arguments: JSON.stringify(input) },
      });
    }
    // Other blocks (server tool results...) have no OpenAI counterpart.
  }
  const message: NormalizedCompletion['choices'][number]['message'] = {
    role: 'assistant',
    // OpenAI's convention: content is null when the answer is only tool calls.
    content: text === '' && toolCalls.length > 0 ? null : text,
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (options.excludeReasoning !== true) {
    if (reasoning !== '') message.reasoning = reasoning;
    if (details.length > 0) message.reasoning_details = details;
  }
  const nativeFinish = stringOrNull(json.stop_reason);
  return {
    upstreamId: stringOrNull(json.id),
    choices: [
      {
        index: 0,
        message,
        finish_reason: normalizeAnthropicStopReason(nativeFinish),
        native_finish_reason: nativeFinish,
      },
    ],
    usage: parseAnthropicUsage(json.usage),
    systemFingerprint: null,
  };
}

function malformed(reason: string): Malformed {
  return { kind: 'malformed', reason };
}
