import { isRecord, parseUpstreamJson, stringOrNull } from '../json-shape.js';
import { plainStreamError, unreadable } from '../http-error.js';
import { KEEPALIVE, type ChunkChoice, type StreamEvent } from '../types.js';
import { classifyOpenAiStreamError } from './classify-error.js';
import { normalizeOpenAiFinishReason } from './finish-reason.js';
import { parseOpenAiUsage } from './usage.js';

/**
 * One SSE event of an OpenAI chat completion stream. The event name is unused by OpenAI; an `error`
 * event name is still honoured because some compatible servers send errors that way.
 */
export function parseOpenAiStreamEvent(data: string, event: string | null): StreamEvent {
  if (data === '[DONE]') return { kind: 'done' };
  let json: unknown;
  try {
    json = parseUpstreamJson(data);
  } catch {
    // Rare paths kept off the per-chunk fast path: padded [DONE], blank keep-alive data.
    const text = data.trim();
    if (text === '[DONE]') return { kind: 'done' };
    // An `error` event whose reason is plain text is still the provider ending the stream with an error.
    if (event === 'error') return { kind: 'error', failure: plainStreamError(text) };
    if (text === '') return KEEPALIVE;
    return { kind: 'malformed', reason: unreadable(text) };
  }
  if (!isRecord(json)) return { kind: 'malformed', reason: 'stream event is not a JSON object' };
  if ((json.error !== undefined && json.error !== null) || event === 'error') {
    return { kind: 'error', failure: classifyOpenAiStreamError(json) };
  }
  const usage = parseOpenAiUsage(json.usage);
  let choices: ChunkChoice[];
  if (Array.isArray(json.choices)) {
    const parsed = parseChoices(json.choices);
    if (typeof parsed === 'string') return { kind: 'malformed', reason: parsed };
    choices = parsed;
  } else if (json.choices === undefined && usage !== null) {
    choices = []; // a usage-only chunk from a server that omits the empty choices array
  } else {
    return { kind: 'malformed', reason: 'stream chunk has no choices array' };
  }
  return {
    kind: 'chunk',
    upstreamId: stringOrNull(json.id),
    choices,
    usage,
    systemFingerprint: stringOrNull(json.system_fingerprint),
  };
}

function parseChoices(raw: unknown[]): ChunkChoice[] | string {
  const choices: ChunkChoice[] = [];
  for (const [position, choice] of raw.entries()) {
    if (!isRecord(choice)) return `stream choices[${position}] is not an object`;
    if (choice.delta !== undefined && choice.delta !== null && !isRecord(choice.delta)) {
      return `stream choices[${position}].delta is not an object`;
    }
    const problem = choiceProblem(choice);
    if (problem !== null) return `stream choices[${position}]${problem}`;
    const nativeFinish = stringOrNull(choice.finish_reason);
    const parsed: ChunkChoice = {
      index: typeof choice.index === 'number' ? choice.index : position,
      // Some servers omit delta on the final chunk.
      delta: isRecord(choice.delta) ? withReasoning(choice.delta) : {},
      finish_reason: normalizeOpenAiFinishReason(nativeFinish),
      native_finish_reason: nativeFinish,
    };
    // Only when asked for (`logprobs: true`); absent, the caller gets null as when the upstream sent null.
    if (isRecord(choice.logprobs)) parsed.logprobs = choice.logprobs;
    choices.push(parsed);
  }
  return choices;
}

const TEXT_FIELDS = ['content', 'reasoning', 'reasoning_content', 'refusal'] as const;

/**
 * Why a choice is not the shape OpenAI's stream gives (or null): a piece of the answer of another
 * type (a number for `content`, tool calls that are not a list of objects) cannot be relayed as it
 * came — clients refuse the chunk or glue it in wrong — nor dropped, which could change the answer;
 * the stream is malformed (routing/stream-reader.ts).
 */
function choiceProblem(choice: Record<string, unknown>): string | null {
  if (choice.index !== undefined && !(Number.isInteger(choice.index) && (choice.index as number) >= 0))
    return '.index is not a whole number';
  if (choice.finish_reason !== undefined && choice.finish_reason !== null && typeof choice.finish_reason !== 'string')
    return '.finish_reason is not a string';
  const delta = choice.delta;
  if (!isRecord(delta)) return null;
  for (const field of TEXT_FIELDS) {
    const value = delta[field];
    if (value !== undefined && value !== null && typeof value !== 'string') return `.delta.${field} is not a string`;
  }
  const calls = delta.tool_calls;
  if (calls === undefined || calls === null) return null;
  if (!Array.isArray(calls)) return '.delta.tool_calls is not a list';
  for (const call of calls) {
    if (!isRecord(call)) return '.delta.tool_calls has an entry that is not an object';
    const fn = call.function;
    if (fn === undefined || fn === null) continue;
    if (!isRecord(fn)) return '.delta.tool_calls[].function is not an object';
    for (const field of ['name', 'arguments'] as const)
      if (fn[field] !== undefined && fn[field] !== null && typeof fn[field] !== 'string')
        return `.delta.tool_calls[].function.${field} is not a string`;
  }
  return null;
}

/**
 * `reasoning_content` (DeepSeek's, some vLLM versions') is the `reasoning` OpenRouter's clients read:
 * renamed, on the streamed and the non-streamed path alike (off the fast path: only such events).
 */
export function withReasoning(part: Record<string, unknown>): Record<string, unknown> {
  if (typeof part.reasoning_content !== 'string') return part;
  const { reasoning_content: text, ...rest } = part;
  return rest.reasoning === undefined || rest.reasoning === null ? { ...rest, reasoning: text } : rest;
}
