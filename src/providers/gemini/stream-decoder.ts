/**
 * One Gemini `streamGenerateContent?alt=sse` stream → OpenAI-format chunks. Each event is a whole
 * GenerateContentResponse holding the next parts; function calls arrive complete, never in
 * fragments. The decoder remembers per candidate whether the role was sent and how many calls were
 * made (OpenAI numbers them, and a STOP after a call means "tool_calls"), and where its
 * `reasoning_details` stand (a thought streamed over many events stays one detail). Gemini sends no end
 * marker: the last event carries `finishReason` and the stream ends with the HTTP body.
 */
import { plainStreamError, unreadable } from '../http-error.js';
import { isRecord, parseUpstreamJson, stringOrNull } from '../json-shape.js';
import { KEEPALIVE, promptSide, type ChunkChoice, type StreamDecoder, type StreamEvent } from '../types.js';
import {
  candidateIndex,
  blockReasonOf,
  newDetailCursor,
  readCandidateParts,
  toOpenAiToolCall,
  toolCallIdOf,
  toReasoningDetails,
  type CandidateParts,
  type DetailCursor,
} from './candidate.js';
import { classifyGeminiStreamError } from './classify-error.js';
import type { GeminiAnswerOptions } from './parse-completion.js';
import { normalizeGeminiFinishReason } from './finish-reason.js';
import { parseGeminiUsage } from './usage.js';

export class GeminiStreamDecoder implements StreamDecoder {
  private readonly roleSent = new Set<number>();
  private readonly callCounts = new Map<number, number>();
  private readonly detailCursors = new Map<number, DetailCursor>();

  constructor(private readonly options: GeminiAnswerOptions = {}) {}

  parseStreamEvent(data: string, event: string | null): StreamEvent {
    let json: unknown;
    try {
      json = parseUpstreamJson(data);
    } catch {
      if (event === 'error') return { kind: 'error', failure: plainStreamError(data) };
      if (data.trim() === '') return KEEPALIVE;
      return malformed(unreadable(data));
    }
    if (Array.isArray(json) && json.length === 1) json = json[0]; // an error as the non-SSE endpoint sends it
    if (!isRecord(json)) return malformed('stream event is not a JSON object');
    if (isRecord(json.error)) return { kind: 'error', failure: classifyGeminiStreamError(json) };
    const responseId = stringOrNull(json.responseId);
    const usage = parseGeminiUsage(json.usageMetadata);
    if (json.candidates !== undefined && json.candidates !== null && !Array.isArray(json.candidates))
      return malformed('candidates is not a list');
    const candidates = Array.isArray(json.candidates) ? json.candidates : [];
    const choices: ChunkChoice[] = [];
    const blockReason = candidates.length === 0 ? blockReasonOf(json) : null;
    if (blockReason !== null) {
      choices.push({
        index: 0,
        delta: this.withRole(0, { content: '' }),
        finish_reason: 'content_filter',
        native_finish_reason: blockReason,
      });
    }
    for (const [position, candidate] of candidates.entries()) {
      if (!isRecord(candidate)) return malformed(`candidates[${position}] is not an object`);
      const index = candidateIndex(candidate);
      const parts = readCandidateParts(candidate, this.options.excludeReasoning === true);
      if (typeof parts === 'string') return malformed(`candidates[${position}]: ${parts}`);
      const delta: Record<string, unknown> = {};
      if (parts.text !== '') delta.content = parts.text;
      if (parts.reasoning !== '') delta.reasoning = parts.reasoning;
      const before = this.callCounts.get(index) ?? 0;
      const details = this.reasoningDetails(index, parts, responseId, before);
      if (details.length > 0) delta.reasoning_details = details;
      if (parts.calls.length > 0) {
        delta.tool_calls = parts.calls.map((call, n) => ({
          index: before + n,
          ...toOpenAiToolCall(call, responseId, before + n),
        }));
        this.callCounts.set(index, before + parts.calls.length);
      }
      const nativeFinish = stringOrNull(candidate.finishReason);
      choices.push({
        index,
        delta: this.withRole(index, delta),
        finish_reason: normalizeGeminiFinishReason(nativeFinish, (this.callCounts.get(index) ?? 0) > 0),
        native_finish_reason: nativeFinish,
      });
    }
    // Every event repeats usageMetadata, complete only in the last one (the one with finishReason).
    // Before it, only its prompt count is passed on: a stream cut short is charged that and an
    // estimate of its output, rather than an output count that was still growing.
    const final = candidates.length === 0 || choices.some((choice) => choice.native_finish_reason !== null);
    if (choices.length === 0 && (usage === null || !final)) return { kind: 'ignore' };
    return {
      kind: 'chunk',
      upstreamId: responseId,
      choices,
      usage: final ? usage : promptSide(usage),
      systemFingerprint: null,
    };
  }

  /** This event's `reasoning_details` of choice `index`, numbered after those its earlier events gave. */
  private reasoningDetails(
    index: number,
    parts: CandidateParts,
    responseId: string | null,
    callsBefore: number,
  ): Record<string, unknown>[] {
    if (parts.thoughts.length === 0) return [];
    let cursor = this.detailCursors.get(index);
    if (cursor === undefined) this.detailCursors.set(index, (cursor = newDetailCursor()));
    const callIds = parts.calls.map((call, n) => toolCallIdOf(call, responseId, callsBefore + n));
    return toReasoningDetails(parts.thoughts, callIds, cursor);
  }

  /** The first delta of each choice says who speaks, as OpenAI's first chunk does. */
  private withRole(index: number, delta: Record<string, unknown>): Record<string, unknown> {
    if (this.roleSent.has(index)) return delta;
    this.roleSent.add(index);
    return { role: 'assistant', ...delta };
  }
}

function malformed(reason: string): StreamEvent {
  return { kind: 'malformed', reason };
}
