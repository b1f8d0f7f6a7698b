import { isRecord, stringOrNull } from '../json-shape.js';
import type { CompletionChoice, NormalizedCompletion } from '../types.js';
import {
  candidateIndex,
  blockReasonOf,
  newDetailCursor,
  readCandidateParts,
  toOpenAiToolCall,
  toolCallIdOf,
  toReasoningDetails,
} from './candidate.js';
import { normalizeGeminiFinishReason } from './finish-reason.js';
import { parseGeminiUsage } from './usage.js';

type Malformed = { kind: 'malformed'; reason: string };

export interface GeminiAnswerOptions {
  /** The caller asked for reasoning without seeing it (`reasoning.exclude`): no thought text is returned. */
  excludeReasoning?: boolean;
}

/** A non-streamed GenerateContentResponse → one choice per candidate; anything off-shape is malformed. */
export function parseGeminiResponse(
  json: unknown,
  options: GeminiAnswerOptions = {},
): NormalizedCompletion | Malformed {
  if (!isRecord(json)) return malformed('response body is not a JSON object');
  if (isRecord(json.error))
    return malformed(`response carries an error: ${stringOrNull(json.error.message) ?? 'no message'}`);
  const responseId = stringOrNull(json.responseId);
  const candidates = Array.isArray(json.candidates) ? json.candidates : [];
  const choices: CompletionChoice[] = [];
  if (candidates.length === 0) {
    const blockReason = blockReasonOf(json);
    if (blockReason === null) return malformed('response has no candidates');
    // A refused prompt is an answer, not a failure: another provider of the model would refuse too.
    choices.push({
      index: 0,
      message: { role: 'assistant', content: '' },
      finish_reason: 'content_filter',
      native_finish_reason: blockReason,
    });
  }
  for (const [position, candidate] of candidates.entries()) {
    if (!isRecord(candidate)) return malformed(`candidates[${position}] is not an object`);
    const parts = readCandidateParts(candidate, options.excludeReasoning === true);
    if (typeof parts === 'string') return malformed(`candidates[${position}]: ${parts}`);
    const toolCalls = parts.calls.map((call, n) => toOpenAiToolCall(call, responseId, n));
    const message: CompletionChoice['message'] = {
      role: 'assistant',
      content: parts.text === '' && toolCalls.length > 0 ? null : parts.text,
    };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (parts.reasoning !== '') message.reasoning = parts.reasoning;
    const callIds = parts.calls.map((call, n) => toolCallIdOf(call, responseId, n));
    const details = toReasoningDetails(parts.thoughts, callIds, newDetailCursor());
    if (details.length > 0) message.reasoning_details = details;
    const nativeFinish = stringOrNull(candidate.finishReason);
    choices.push({
      index: candidateIndex(candidate),
      message,
      finish_reason: normalizeGeminiFinishReason(nativeFinish, toolCalls.length > 0),
      native_finish_reason: nativeFinish,
    });
  }
  return { upstreamId: responseId, choices, usage: parseGeminiUsage(json.usageMetadata), systemFingerprint: null };
}

function malformed(reason: string): Malformed {
  return { kind: 'malformed', reason };
}
