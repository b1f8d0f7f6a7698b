/**
 * The mock provider's bodies, shaped like api.openai.com's. Stream chunks are assembled from a
 * prefix computed once per response, because the mock serves throughput benchmarks.
 */
import { SSE_DONE } from '../../streaming/sse-writer.js';

export const MOCK_FINGERPRINT = 'fp_mock0001';

export interface ResponseIdentity {
  id: string; // chatcmpl-...
  created: number; // unix seconds
  model: string; // as requested
}

export function openAiUsage(promptTokens: number, completionTokens: number): Record<string, unknown> {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export function completionBody(
  who: ResponseIdentity,
  content: string,
  finishReason: string,
  usage: Record<string, unknown> | null,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    id: who.id,
    object: 'chat.completion',
    created: who.created,
    model: who.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    service_tier: 'default',
    system_fingerprint: MOCK_FINGERPRINT,
  };
  if (usage !== null) body.usage = usage;
  return body;
}

/** Formats the SSE events of one streamed response. */
export class ChunkFormatter {
  private readonly prefix: string;
  private readonly suffix: string;

  /** `usageNull`: OpenAI adds `"usage":null` to every chunk when the caller asked for usage. */
  constructor(who: ResponseIdentity, usageNull: boolean) {
    this.prefix = `data: {"id":${JSON.stringify(who.id)},"object":"chat.completion.chunk","created":${who.created},"model":${JSON.stringify(who.model)},"system_fingerprint":"${MOCK_FINGERPRINT}","choices":[`;
    this.suffix = usageNull ? '],"usage":null}\n\n' : ']}\n\n';
  }

  role(): string {
    return `${this.prefix}{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}${this.suffix}`;
  }

  content(piece: string): string {
    return `${this.prefix}{"index":0,"delta":{"content":${JSON.stringify(piece)}},"logprobs":null,"finish_reason":null}${this.suffix}`;
  }

  finish(reason: string): string {
    return `${this.prefix}{"index":0,"delta":{},"logprobs":null,"finish_reason":"${reason}"}${this.suffix}`;
  }

  usage(usage: Record<string, unknown>): string {
    return `${this.prefix}],"usage":${JSON.stringify(usage)}}\n\n`;
  }

  /** A chunk cut off mid-JSON, for the `malformed` behavior. */
  malformed(): string {
    return `${this.prefix}{"index":0,"delta":{"content":"\n\n`;
  }

  done(): string {
    return SSE_DONE;
  }
}

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The error api.openai.com gives for a status, as far as the mock imitates it. */
export function openAiErrorBody(
  status: number,
  model: string,
  overrides: { code: string | null; message: string | null },
): OpenAiErrorBody {
  const base = defaultError(status, model);
  return {
    error: {
      message: overrides.message ?? base.message,
      type: base.type,
      param: base.param,
      code: overrides.code ?? base.code,
    },
  };
}

function defaultError(status: number, model: string): OpenAiErrorBody['error'] {
  switch (status) {
    case 400:
      return { message: 'Invalid request (mock).', type: 'invalid_request_error', param: null, code: null };
    case 401:
      return {
        message: 'Incorrect API key provided: sk-mo***ck.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      };
    case 404:
      return {
        message: `The model \`${model}\` does not exist or you do not have access to it.`,
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_found',
      };
    case 429:
      return {
        message: `Rate limit reached for ${model} in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1.`,
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      };
    case 500:
      return {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      };
    case 503:
      return { message: 'The server is overloaded or not ready yet.', type: 'server_error', param: null, code: null };
    default:
      return {
        message: `Mock error ${status}.`,
        type: status >= 500 ? 'server_error' : 'invalid_request_error',
        param: null,
        code: null,
      };
  }
}

export function contextLengthBody(promptTokens: number): OpenAiErrorBody {
  return {
    error: {
      message: `This model's maximum context length is 128000 tokens. However, your messages resulted in ${Math.max(promptTokens, 128001)} tokens. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
}

export function contentPolicyBody(): OpenAiErrorBody {
  return {
    error: {
      message:
        'Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.',
      type: 'invalid_request_error',
      param: null,
      code: 'content_policy_violation',
    },
  };
}

/** The in-band error OpenAI sends when generation fails after the stream started. */
export function streamErrorEvent(model: string, overrides: { code: string | null; message: string | null }): string {
  return `data: ${JSON.stringify(openAiErrorBody(500, model, overrides))}\n\n`;
}
