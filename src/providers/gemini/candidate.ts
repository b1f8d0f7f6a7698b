/**
 * The parts of one Gemini candidate, read into what OpenAI's message has: text, reasoning (thought
 * summaries, `thought: true`) and tool calls. Shared by whole responses and stream chunks, whose
 * candidates carry the same parts, a few at a time.
 */
import { isRecord, stringOrNull } from '../json-shape.js';

export interface GeminiCall {
  id: string | null;
  name: string;
  args: Record<string, unknown>;
  thoughtSignature: string | null;
}

export interface CandidateParts {
  text: string;
  reasoning: string;
  calls: GeminiCall[];
}

/** The candidate's parts, or why they cannot be read. A candidate without content (blocked) has none. */
export function readCandidateParts(candidate: Record<string, unknown>): CandidateParts | string {
  const read: CandidateParts = { text: '', reasoning: '', calls: [] };
  const content = candidate.content;
  if (content === undefined || content === null) return read;
  if (!isRecord(content)) return 'candidate content is not an object';
  if (content.parts === undefined) return read;
  if (!Array.isArray(content.parts)) return 'candidate content.parts is not an array';
  for (const part of content.parts) {
    if (!isRecord(part)) return 'candidate part is not an object';
    if (typeof part.text === 'string') {
      if (part.thought === true) read.reasoning += part.text;
      else read.text += part.text;
    } else if (isRecord(part.functionCall)) {
      const name = stringOrNull(part.functionCall.name);
      if (name === null) return 'functionCall part without a name';
      const args = isRecord(part.functionCall.args) ? part.functionCall.args : {};
      read.calls.push({
        id: stringOrNull(part.functionCall.id),
        name,
        args,
        thoughtSignature: stringOrNull(part.thoughtSignature),
      });
    }
    // executableCode, codeExecutionResult, inlineData... have no OpenAI chat counterpart.
  }
  return read;
}

/**
 * An OpenAI tool call for a Gemini function call. Gemini rarely gives calls an id; ours is made
 * from the response id and the call's position, so it is stable and the same when streamed.
 */
export function toOpenAiToolCall(
  call: GeminiCall,
  responseId: string | null,
  position: number,
): Record<string, unknown> {
  const toolCall: Record<string, unknown> = {
    id: call.id ?? `call_${responseId ?? 'gemini'}_${position}`,
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
