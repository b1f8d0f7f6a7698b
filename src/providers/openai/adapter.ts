/**
 * The adapter for OpenAI's Chat Completions API and the many servers that copy it (vLLM, Groq,
 * Together, DeepSeek...). Our wire format is OpenAI's, so this is mostly validation.
 */
import { reasoningExcluded } from '../openai-input.js';
import type { EndpointTarget, ProviderAdapter, StreamDecoder, StreamEvent, UpstreamRequest } from '../types.js';
import { classifyOpenAiHttpError } from './classify-error.js';
import { parseOpenAiCompletion } from './parse-completion.js';
import { parseOpenAiStreamEvent } from './parse-stream-event.js';
import { OpenAiStreamDecoder } from './stream-decoder.js';

/** OpenRouter extensions that an OpenAI-compatible upstream would reject or misread. */
const OPENROUTER_ONLY_FIELDS: ReadonlySet<string> = new Set([
  'models',
  'provider',
  'transforms',
  'route',
  'usage',
  'plugins',
]);

export function buildOpenAiRequest(
  target: EndpointTarget,
  body: Record<string, unknown>,
  stream: boolean,
): UpstreamRequest {
  // Copied field by field, not spread and then trimmed with `delete`: V8 gives a spread copy that
  // gains new keys a hidden class of its own, and `delete` turns an object into a dictionary (both
  // slow to stringify and to collect, once per request). Fastify's JSON parser refuses `__proto__`.
  const upstreamBody: Record<string, unknown> = {};
  for (const field of Object.keys(body)) {
    // OpenAI rejects stream_options on a non-streamed request.
    if (OPENROUTER_ONLY_FIELDS.has(field) || (field === 'stream_options' && !stream)) continue;
    upstreamBody[field] = body[field];
  }
  upstreamBody.model = target.upstreamModel;
  upstreamBody.stream = stream;
  // Usage is always reported to our callers (docs/api.md), so we always ask for it.
  if (stream) upstreamBody.stream_options = { include_usage: true };

  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    // Tollgate does not decompress answers: without this header any encoding is acceptable (RFC 9110).
    'accept-encoding': 'identity',
  };
  if (target.apiKey !== null) headers.authorization = `Bearer ${target.apiKey}`;
  // Last, so an operator can replace auth for servers that use another scheme (Azure's `api-key`).
  Object.assign(headers, target.extraHeaders);

  return { url: `${target.baseUrl.replace(/\/+$/, '')}/chat/completions`, headers, body: JSON.stringify(upstreamBody) };
}

export const openAiAdapter: ProviderAdapter = {
  kind: 'openai',
  buildRequest: buildOpenAiRequest,
  parseResponse: (json, request) => {
    const parsed = parseOpenAiCompletion(json);
    if ('kind' in parsed || !reasoningExcluded(request)) return parsed;
    return { ...parsed, choices: parsed.choices.map((c) => ({ ...c, message: withoutReasoning(c.message) })) };
  },
  parseStreamEvent: parseOpenAiStreamEvent,
  openStream: (request) => {
    const decoder = new OpenAiStreamDecoder();
    return reasoningExcluded(request) ? new ReasoningHidingDecoder(decoder) : decoder;
  },
  classifyError: (status, headers, bodyText) => classifyOpenAiHttpError(status, headers, bodyText, Date.now()),
};

/**
 * `reasoning.exclude` on an OpenAI-compatible endpoint, as on the native ones: the model may think,
 * the caller gets no `reasoning` or `reasoning_details` (OpenRouter omits them).
 */
function withoutReasoning<T extends Record<string, unknown>>(part: T): T {
  if (part.reasoning === undefined && part.reasoning_details === undefined) return part;
  const { reasoning: _reasoning, reasoning_details: _details, ...rest } = part;
  return rest as T;
}

class ReasoningHidingDecoder implements StreamDecoder {
  constructor(private readonly inner: StreamDecoder) {}

  parseStreamEvent(data: string, event: string | null): StreamEvent {
    const parsed = this.inner.parseStreamEvent(data, event);
    if (parsed.kind !== 'chunk') return parsed;
    return { ...parsed, choices: parsed.choices.map((c) => ({ ...c, delta: withoutReasoning(c.delta) })) };
  }
}
