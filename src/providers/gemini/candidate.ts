/**
 * The parts of one Gemini candidate, read into what OpenAI's message has: text, reasoning (thought
 * summaries, `thought: true`) and tool calls. Shared by whole responses and stream chunks, whose
 * candidates carry the same parts, a few at a time. Thoughts and thought signatures are also given as
 * OpenRouter's `reasoning_details` (format `google-gemini-v1`): clients that rebuild tool calls from
 * id, name and arguments only (@openrouter/ai-sdk-provider) keep those and send them back, and
 * Gemini refuses a function call sent back without its signature.
 */
import { isRecord, stringOrNull } from '../json-shape.js';

export interface GeminiCall {
  id: string | null;
  name: string;
  args: Record<string, unknown>;
  thoughtSignature: string | null;
}

/** One piece of the candidate's reasoning, in part order: thought text, or the signature a part carried. */
export type ThoughtPiece =
  | { kind: 'text'; text: string }
  /** `call`: the position in `calls` of the function call the signature came on; null for any other part. */
  | { kind: 'signature'; signature: string; call: number | null };

export interface CandidateParts {
  text: string;
  reasoning: string;
  calls: GeminiCall[];
  thoughts: ThoughtPiece[];
}

/**
 * A candidate's `index`. Absent is 0: protobuf's JSON leaves out a field at its default, so the first
 * candidate may come without one (taking its place in the list instead made a later candidate 0 and
 * this one a second 1, its text joined to that one's).
 */
export function candidateIndex(candidate: Record<string, unknown>): number {
  return typeof candidate.index === 'number' ? candidate.index : 0;
}

/**
 * The candidate's parts, or why they cannot be read. A candidate without content (blocked) has none.
 * `hideThoughts` (the caller's `reasoning.exclude`): thought text is dropped even when Gemini sends it
 * despite `includeThoughts: false`; signatures are kept — they carry no thought, and Gemini refuses a
 * function call sent back without its own.
 */
export function readCandidateParts(candidate: Record<string, unknown>, hideThoughts = false): CandidateParts | string {
  const read: CandidateParts = { text: '', reasoning: '', calls: [], thoughts: [] };
  const content = candidate.content;
  if (content === undefined || content === null) return read;
  if (!isRecord(content)) return 'candidate content is not an object';
  if (content.parts === undefined) return read;
  if (!Array.isArray(content.parts)) return 'candidate content.parts is not an array';
  for (const part of content.parts) {
    if (!isRecord(part)) return 'candidate part is not an object';
    const signature = stringOrNull(part.thoughtSignature);
    // A piece of the answer of another type cannot be dropped without changing the answer.
    if (part.text !== undefined && part.text !== null && typeof part.text !== 'string')
      return 'candidate part text is not a string';
    if (typeof part.text === 'string') {
      if (part.thought !== true) read.text += part.text;
      else if (part.text !== '' && !hideThoughts) {
        read.reasoning += part.text;
        read.thoughts.push({ kind: 'text', text: part.text });
      }
    } else if (isRecord(part.functionCall)) {
      const name = stringOrNull(part.functionCall.name);
      if (name === null) return 'functionCall part without a name';
      const args = isRecord(part.functionCall.args) ? part.functionCall.args : {};
      read.calls.push({ id: stringOrNull(part.functionCall.id), name, args, thoughtSignature: signature });
      if (signature !== null) read.thoughts.push({ kind: 'signature', signature, call: read.calls.length - 1 });
      continue;
    }
    // executableCode, codeExecutionResult, inlineData... have no OpenAI chat counterpart; their
    // signature (and a text part's) is still kept, for the turn to be sent back whole.
    if (signature !== null) read.thoughts.push({ kind: 'signature', signature, call: null });
  }
  return read;
}

/**
 * Where one choice's `reasoning_details` stand: how many were given, and whether the last is thought
 * text that the next text continues. A stream keeps one per choice, so a thought streamed over many
 * events is fragments of one detail (one `index`), which the non-streamed fold merges back into one.
 */
export interface DetailCursor {
  count: number;
  textOpen: boolean;
}

export function newDetailCursor(): DetailCursor {
  return { count: 0, textOpen: false };
}

export const GEMINI_DETAIL_FORMAT = 'google-gemini-v1';

/**
 * The pieces as OpenRouter's Gemini `reasoning_details`: thought text as `reasoning.text`, each
 * signature as `reasoning.encrypted` whose `id` is the tool call's id when it came on a function call
 * (that is how it finds its call again on the way back, contents.ts). `callIds` are the ids given to
 * this candidate's `calls`, in order.
 */
export function toReasoningDetails(
  thoughts: readonly ThoughtPiece[],
  callIds: readonly string[],
  cursor: DetailCursor,
): Record<string, unknown>[] {
  const details: Record<string, unknown>[] = [];
  for (const piece of thoughts) {
    if (piece.kind === 'text') {
      const last = details.at(-1);
      if (cursor.textOpen && last?.type === 'reasoning.text') last.text = `${String(last.text)}${piece.text}`;
      else {
        const index = cursor.textOpen ? cursor.count - 1 : cursor.count++;
        cursor.textOpen = true;
        details.push({ type: 'reasoning.text', text: piece.text, format: GEMINI_DETAIL_FORMAT, index });
      }
      continue;
    }
    cursor.textOpen = false;
    const detail: Record<string, unknown> = { type: 'reasoning.encrypted', data: piece.signature };
    const id = piece.call === null ? undefined : callIds[piece.call];
    if (id !== undefined) detail.id = id;
    detail.format = GEMINI_DETAIL_FORMAT;
    detail.index = cursor.count++;
    details.push(detail);
  }
  return details;
}

/**
 * A Gemini function call's OpenAI tool call id. Gemini rarely gives calls an id; ours is made from
 * the response id and the call's position, so it is stable and the same when streamed.
 */
export function toolCallIdOf(call: GeminiCall, responseId: string | null, position: number): string {
  return call.id ?? `call_${responseId ?? 'gemini'}_${position}`;
}

/**
 * An OpenAI tool call for a Gemini function call. Its signature is also in `extra_content`, where
 * Google's own OpenAI-compatible endpoint puts it (and the `openai` SDK keeps it).
 */
export function toOpenAiToolCall(
  call: GeminiCall,
  responseId: string | null,
  position: number,
): Record<string, unknown> {
  const toolCall: Record<string, unknown> = {
    id: toolCallIdOf(call, responseId, position),
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.args) },
  };
  if (call.thoughtSignature !== null) toolCall.extra_content = { google: { thought_signature: call.thoughtSignature } };
  return toolCall;
}

/** The prompt was refused before any candidate was made (`promptFeedback.blockReason`). */
export function blockReasonOf(json: Record<string, unknown>): string | null {
  return isRecord(json.promptFeedback) ? stringOrNull(json.promptFeedback.blockReason) : null;
}
