/**
 * The adapter for OpenAI's Chat Completions API and the many servers that copy it (vLLM, Groq,
 * Together, DeepSeek...). Our wire format is OpenAI's, so this is mostly validation.
 */
import type { EndpointTarget, ProviderAdapter, UpstreamRequest } from '../types.js';
import { classifyOpenAiHttpError } from './classify-error.js';
import { parseOpenAiCompletion } from './parse-completion.js';
import { parseOpenAiStreamEvent } from './parse-stream-event.js';

/** OpenRouter extensions that an OpenAI-compatible upstream would reject or misread. */
const OPENROUTER_ONLY_FIELDS = ['models', 'provider', 'transforms', 'route', 'usage', 'plugins'] as const;

export function buildOpenAiRequest(
  target: EndpointTarget,
  body: Record<string, unknown>,
  stream: boolean,
): UpstreamRequest {
  const upstreamBody: Record<string, unknown> = { ...body, model: target.upstreamModel, stream };
  for (const field of OPENROUTER_ONLY_FIELDS) delete upstreamBody[field];
  // Usage is always reported to our callers (docs/api.md), so we always ask for it; OpenAI rejects
  // stream_options on a non-streamed request.
  if (stream) upstreamBody.stream_options = { include_usage: true };
  else delete upstreamBody.stream_options;

  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  };
  if (target.apiKey !== null) headers.authorization = `Bearer ${target.apiKey}`;
  // Last, so an operator can replace auth for servers that use another scheme (Azure's `api-key`).
  Object.assign(headers, target.extraHeaders);

  return { url: `${target.baseUrl.replace(/\/+$/, '')}/chat/completions`, headers, body: JSON.stringify(upstreamBody) };
}

export const openAiAdapter: ProviderAdapter = {
  kind: 'openai',
  buildRequest: buildOpenAiRequest,
  parseResponse: parseOpenAiCompletion,
  parseStreamEvent: parseOpenAiStreamEvent,
  classifyError: (status, headers, bodyText) => classifyOpenAiHttpError(status, headers, bodyText, Date.now()),
};
