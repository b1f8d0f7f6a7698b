/**
 * Provider adapters are pure functions over data: they never see Fastify or undici. The executor in
 * `routing/` does the I/O and calls these to build requests and to read responses and stream events.
 * The gateway's wire format is OpenAI's chat completion format, so adapters translate to and from it.
 */

export type ProviderKind = 'openai' | 'anthropic' | 'gemini' | 'demo';

/** Where and how to call one endpoint of a model. */
export interface EndpointTarget {
  providerId: string;
  baseUrl: string; // e.g. "https://api.openai.com/v1" (no trailing slash)
  apiKey: string | null;
  upstreamModel: string; // the provider's own model name
  extraHeaders: Record<string, string>;
  /**
   * The endpoint's config lists `structured_outputs`: a translating adapter sends the caller's JSON
   * schema (and strict tools) in the provider's own structured-output form (Anthropic's
   * `output_config.format`), which only some of its models accept.
   */
  structuredOutputs?: boolean;
}

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface NormalizedUsage {
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number | null;
  cachedTokens: number | null;
  /** Prompt tokens written to the provider's prompt cache (Anthropic's `cache_creation_input_tokens`), when it says. */
  cacheWriteTokens?: number;
  /** Of those, the ones written for an hour (Anthropic's `cache_creation.ephemeral_1h_input_tokens`). */
  cacheWrite1hTokens?: number;
  /**
   * The provider's usage lacked a readable prompt (or completion) count: the number above is 0 and
   * the charge uses our estimate for that side instead (pipeline/generation.ts), never "free".
   */
  promptUnknown?: true;
  completionUnknown?: true;
}

/** A usage whose sides the provider did (or did not) count, the unknown ones marked. */
export function usageOf(
  promptTokens: number | null,
  completionTokens: number | null,
  reasoningTokens: number | null,
  cachedTokens: number | null,
): NormalizedUsage {
  const usage: NormalizedUsage = {
    promptTokens: promptTokens ?? 0,
    completionTokens: completionTokens ?? 0,
    reasoningTokens,
    cachedTokens,
  };
  if (promptTokens === null) usage.promptUnknown = true;
  if (completionTokens === null) usage.completionUnknown = true;
  return usage;
}

/**
 * What a usage reported early in a stream (Anthropic's `message_start`, Gemini's every event) tells
 * for certain: the prompt's count. The completion is still growing, so it is left unknown: a stream
 * cut before the final usage is charged the provider's prompt count and our estimate of the text
 * produced, and the final usage, when it comes, replaces this one.
 */
export function promptSide(usage: NormalizedUsage | null): NormalizedUsage | null {
  if (usage === null || usage.promptUnknown === true) return null;
  const side = usageOf(usage.promptTokens, null, null, usage.cachedTokens);
  if (usage.cacheWriteTokens !== undefined) side.cacheWriteTokens = usage.cacheWriteTokens;
  if (usage.cacheWrite1hTokens !== undefined) side.cacheWrite1hTokens = usage.cacheWrite1hTokens;
  return side;
}

/** The provider's whole count: both sides read (a prompt-only usage from early in a stream is not). */
export function isFinalUsage(usage: NormalizedUsage | null): boolean {
  return usage !== null && usage.promptUnknown !== true && usage.completionUnknown !== true;
}

/**
 * A choice's token log probabilities, OpenAI's `logprobs` object: `content` and `refusal`, each a
 * list of `{ token, logprob, bytes, top_logprobs }` or null, as the provider sent them.
 */
export type ChoiceLogprobs = Record<string, unknown>;

/** One OpenAI-format choice of a non-streamed completion. */
export interface CompletionChoice {
  index: number;
  message: Record<string, unknown> & { role: string; content: string | null };
  finish_reason: string | null;
  native_finish_reason: string | null;
  /** Absent when the provider gave none (Anthropic and Gemini never do): the caller gets `null`. */
  logprobs?: ChoiceLogprobs;
}

export interface NormalizedCompletion {
  upstreamId: string | null;
  choices: CompletionChoice[];
  usage: NormalizedUsage | null;
  systemFingerprint: string | null;
}

/** One OpenAI-format choice delta of a stream chunk. */
export interface ChunkChoice {
  index: number;
  delta: Record<string, unknown>;
  finish_reason: string | null;
  native_finish_reason: string | null;
  /** This chunk's tokens; absent when the provider sent none (the caller gets `null`). */
  logprobs?: ChoiceLogprobs;
}

export type StreamEvent =
  | {
      kind: 'chunk';
      upstreamId: string | null;
      choices: ChunkChoice[];
      usage: NormalizedUsage | null;
      systemFingerprint: string | null;
    }
  | { kind: 'done' }
  /** The upstream reported an error in-band (an `error` object inside the stream). */
  | { kind: 'error'; failure: UpstreamFailure }
  /** An event that carries nothing for the caller (a block boundary, a signature, an unknown event type). */
  | { kind: 'ignore' }
  /**
   * A keep-alive and nothing else (Anthropic's `ping`, an event with blank data): like an SSE
   * comment, it is not progress, so it does not extend the idle budget (routing/stream-reader.ts).
   */
  | { kind: 'keepalive' }
  /** The payload is not what the protocol promises (bad JSON, wrong shape). */
  | { kind: 'malformed'; reason: string };

/** The one keep-alive event (decoders return it as is). */
export const KEEPALIVE: StreamEvent = Object.freeze({ kind: 'keepalive' });

/**
 * Why an attempt failed, classified once by the adapter so routing decides failover from data.
 * `retryable`: another endpoint may succeed (connection trouble, 408/429/5xx, our provider key rejected).
 */
export type FailureType =
  | 'rate_limited' // 429
  | 'timeout'
  | 'connection' // reset, refused, DNS
  | 'server' // 5xx
  | 'auth' // 401/403 from the upstream: our provider key is bad
  | 'not_found' // 404: the endpoint does not serve this model (retired, renamed, no access) — the operator's catalog, not the caller
  | 'invalid_response'
  | 'bad_request' // the caller's own fault: returned as is
  | 'context_length_exceeded'
  | 'content_policy';

export interface UpstreamFailure {
  type: FailureType;
  status: number | null; // upstream HTTP status when there was one, or the code an error event inside a stream gave (`inStream`)
  message: string;
  providerCode: string | number | null; // the upstream's own error code
  retryAfterMs: number | null;
  raw: unknown; // the upstream error body (parsed JSON when possible), never our secrets
  /** The message is the gateway's own words about what the provider did, not the provider's text. */
  ours?: true;
  /** An error event inside a 200 stream: its `status` is the event's code, no HTTP status was sent. */
  inStream?: true;
}

/** Reads the events of one stream in order; may keep state from one event to the next. */
export interface StreamDecoder {
  parseStreamEvent(data: string, event: string | null): StreamEvent;
}

export interface ProviderAdapter {
  readonly kind: ProviderKind;
  buildRequest(target: EndpointTarget, body: Record<string, unknown>, stream: boolean): UpstreamRequest;
  /**
   * `request`: the body `buildRequest` was given, for answers that depend on what was asked (e.g. a
   * caller's `reasoning.exclude`: the model thinks, the thinking is not returned).
   */
  parseResponse(
    json: unknown,
    request?: Record<string, unknown>,
  ): NormalizedCompletion | { kind: 'malformed'; reason: string };
  /** One SSE event's data (and event name, for APIs that use it). */
  parseStreamEvent(data: string, event: string | null): StreamEvent;
  /**
   * A fresh decoder for one stream, for protocols whose events depend on earlier ones (Anthropic
   * reports prompt usage at the start and tool arguments by content-block index). Stream readers
   * use it instead of `parseStreamEvent` when present.
   */
  openStream?(request?: Record<string, unknown>): StreamDecoder;
  classifyError(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    bodyText: string,
  ): UpstreamFailure;
}
