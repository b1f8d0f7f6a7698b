/**
 * The adapter for Anthropic's Messages API (POST /v1/messages). Requests are translated from our
 * OpenAI-format body; answers and stream events back to OpenAI's completion and chunk shapes.
 */
import type { EndpointTarget, ProviderAdapter, UpstreamRequest } from '../types.js';
import { classifyAnthropicHttpError } from './classify-error.js';
import { parseAnthropicMessage } from './parse-completion.js';
import { reasoningExcluded } from '../openai-input.js';
import { toAnthropicBody } from './request-body.js';
import { AnthropicStreamDecoder } from './stream-decoder.js';

export const ANTHROPIC_VERSION = '2023-06-01';

export function buildAnthropicRequest(
  target: EndpointTarget,
  body: Record<string, unknown>,
  stream: boolean,
): UpstreamRequest {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    // Tollgate does not decompress answers: without this header any encoding is acceptable (RFC 9110).
    'accept-encoding': 'identity',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (target.apiKey !== null) headers['x-api-key'] = target.apiKey;
  // Last, so an operator can add `anthropic-beta` or pin another version.
  Object.assign(headers, target.extraHeaders);
  const base = target.baseUrl.replace(/\/+$/, '');
  // The documented base is https://api.anthropic.com; a base that already ends in /v1 is accepted too.
  const url = base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
  return {
    url,
    headers,
    body: JSON.stringify(
      toAnthropicBody(body, target.upstreamModel, stream, { structuredOutputs: target.structuredOutputs === true }),
    ),
  };
}

/** With the request, a caller's `reasoning.exclude` leaves the thinking out of the answer (it still thinks). */
export const anthropicAdapter: ProviderAdapter = {
  kind: 'anthropic',
  buildRequest: buildAnthropicRequest,
  parseResponse: (json: unknown, request?: Record<string, unknown>) =>
    parseAnthropicMessage(json, { excludeReasoning: reasoningExcluded(request) }),
  // One event read without the rest of its stream; streams are read with `openStream()`.
  parseStreamEvent: (data, event) => new AnthropicStreamDecoder().parseStreamEvent(data, event),
  openStream: (request?: Record<string, unknown>) =>
    new AnthropicStreamDecoder({ excludeReasoning: reasoningExcluded(request) }),
  classifyError: (status, headers, bodyText) => classifyAnthropicHttpError(status, headers, bodyText, Date.now()),
};
