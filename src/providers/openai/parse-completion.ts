import { withReasoning } from './parse-stream-event.js';
import { isRecord, stringOrNull } from '../json-shape.js';
import type { CompletionChoice, NormalizedCompletion } from '../types.js';
import { normalizeOpenAiFinishReason } from './finish-reason.js';
import { parseOpenAiUsage } from './usage.js';

type Malformed = { kind: 'malformed'; reason: string };

/** A non-streamed OpenAI chat completion → NormalizedCompletion; anything off-shape is malformed. */
export function parseOpenAiCompletion(json: unknown): NormalizedCompletion | Malformed {
  if (!isRecord(json)) return malformed('response body is not a JSON object');
  if (json.error !== undefined && json.error !== null) {
    // Some compatible servers answer 200 with an error body; it is not a completion.
    const message = isRecord(json.error) ? stringOrNull(json.error.message) : stringOrNull(json.error);
    return malformed(`response carries an error: ${message ?? 'no message'}`);
  }
  if (!Array.isArray(json.choices)) return malformed('response has no choices array');
  if (json.choices.length === 0) return malformed('response has an empty choices array');
  const choices: CompletionChoice[] = [];
  for (const [position, raw] of json.choices.entries()) {
    const choice = parseChoice(raw, position);
    if (typeof choice === 'string') return malformed(choice);
    choices.push(choice);
  }
  return {
    upstreamId: stringOrNull(json.id),
    choices,
    usage: parseOpenAiUsage(json.usage),
    systemFingerprint: stringOrNull(json.system_fingerprint),
  };
}

/** The choice, or why it is malformed. */
function parseChoice(raw: unknown, position: number): CompletionChoice | string {
  if (!isRecord(raw) || !isRecord(raw.message)) return `choices[${position}] has no message object`;
  const content = readContent(raw.message.content);
  if (content === undefined) return `choices[${position}].message.content is neither a string nor null`;
  const nativeFinish = stringOrNull(raw.finish_reason);
  const choice: CompletionChoice = {
    index: typeof raw.index === 'number' ? raw.index : position,
    // Other message fields (tool_calls, refusal, reasoning, annotations...) pass through untouched.
    message: { ...withReasoning(raw.message), role: stringOrNull(raw.message.role) ?? 'assistant', content },
    finish_reason: normalizeOpenAiFinishReason(nativeFinish),
    native_finish_reason: nativeFinish,
  };
  if (isRecord(raw.logprobs)) choice.logprobs = raw.logprobs;
  return choice;
}

/**
 * String or null; some compatible servers (e.g. Mistral's reasoning models) send an array of parts,
 * whose text parts are joined. `undefined` means unreadable.
 */
function readContent(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return undefined;
  let text = '';
  for (const part of value) {
    if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') text += part.text;
  }
  return text;
}

function malformed(reason: string): Malformed {
  return { kind: 'malformed', reason };
}
