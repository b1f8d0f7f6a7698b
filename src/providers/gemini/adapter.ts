/**
 * The adapter for Google's Gemini API (generateContent, and streamGenerateContent with SSE).
 * Requests are translated from our OpenAI-format body; answers and stream events back to OpenAI's
 * completion and chunk shapes.
 */
import { reasoningExcluded } from '../openai-input.js';
import type { EndpointTarget, ProviderAdapter, UpstreamRequest } from '../types.js';
import { classifyGeminiHttpError } from './classify-error.js';
import { parseGeminiResponse } from './parse-completion.js';
import { toGeminiBody } from './request-body.js';
import { GeminiStreamDecoder } from './stream-decoder.js';

export function buildGeminiRequest(
  target: EndpointTarget,
  body: Record<string, unknown>,
  stream: boolean,
): UpstreamRequest {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    // Tollgate does not decompress answers: without this header any encoding is acceptable (RFC 9110).
    'accept-encoding': 'identity',
  };
  if (target.apiKey !== null) headers['x-goog-api-key'] = target.apiKey;
  Object.assign(headers, target.extraHeaders);
  // "gemini-2.5-flash" names a base model; "tunedModels/x" or "models/x" are resource names already.
  const model = target.upstreamModel.includes('/') ? target.upstreamModel : `models/${target.upstreamModel}`;
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return {
    url: `${target.baseUrl.replace(/\/+$/, '')}/${model}:${method}`,
    headers,
    body: JSON.stringify(toGeminiBody(body)),
  };
}

/** With the request, a caller's `reasoning.exclude` leaves thought text out of the answer (it still thinks). */
export const geminiAdapter: ProviderAdapter = {
  kind: 'gemini',
  buildRequest: buildGeminiRequest,
  parseResponse: (json, request) => parseGeminiResponse(json, { excludeReasoning: reasoningExcluded(request) }),
  // One event read without the rest of its stream; streams are read with `openStream()`.
  parseStreamEvent: (data, event) => new GeminiStreamDecoder().parseStreamEvent(data, event),
  openStream: (request) => new GeminiStreamDecoder({ excludeReasoning: reasoningExcluded(request) }),
  classifyError: (status, headers, bodyText) => classifyGeminiHttpError(status, headers, bodyText, Date.now()),
};
