/**
 * The response bodies of docs/api.md/§2.4: completion, stream chunk, usage chunk, in-band error chunk.
 */
import type { z } from 'zod';
import type { usageSchema } from './response-schemas.js';
import type { ErrorType } from '../core/errors.js';
import { unitsToUsd } from '../core/money.js';
import type { ChunkChoice, CompletionChoice } from '../providers/types.js';
import type { Charge } from './generation.js';

export interface ResponseIdentity {
  id: string;
  created: number; // seconds
  model: string;
  provider: string;
}

export function renderUsage(charge: Charge): z.output<typeof usageSchema> {
  const r = charge.record;
  return {
    prompt_tokens: charge.promptTokens,
    completion_tokens: charge.completionTokens,
    total_tokens: charge.promptTokens + charge.completionTokens,
    cost: unitsToUsd(r.totalCost),
    is_byok: r.isByok,
    // As OpenRouter reports them: cache reads, and (when the provider counts them) cache writes.
    prompt_tokens_details:
      charge.cacheWriteTokens === undefined
        ? { cached_tokens: r.tokensCached ?? 0 }
        : { cached_tokens: r.tokensCached ?? 0, cache_write_tokens: charge.cacheWriteTokens },
    completion_tokens_details: { reasoning_tokens: r.tokensReasoning ?? 0 },
    cost_details: {
      upstream_inference_cost: unitsToUsd(r.upstreamPromptCost + r.upstreamCompletionCost),
      upstream_inference_prompt_cost: unitsToUsd(r.upstreamPromptCost),
      upstream_inference_completions_cost: unitsToUsd(r.upstreamCompletionCost),
    },
  };
}

export function renderCompletion(
  identity: ResponseIdentity,
  choices: readonly CompletionChoice[],
  systemFingerprint: string | null,
  charge: Charge,
) {
  return {
    id: identity.id,
    object: 'chat.completion',
    created: identity.created,
    model: identity.model,
    provider: identity.provider,
    system_fingerprint: systemFingerprint,
    choices: choices.map((c) => ({
      index: c.index,
      message: c.message,
      finish_reason: c.finish_reason,
      native_finish_reason: c.native_finish_reason,
      logprobs: c.logprobs ?? null,
    })),
    usage: renderUsage(charge),
  };
}

export function renderChunk(
  identity: ResponseIdentity,
  choices: readonly ChunkChoice[],
  systemFingerprint: string | null,
) {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    provider: identity.provider,
    // Optional but never null in a chunk: @openrouter/sdk validates it as `string | undefined`.
    ...(systemFingerprint === null ? {} : { system_fingerprint: systemFingerprint }),
    choices: choices.map((c) => ({
      index: c.index,
      delta: c.delta,
      finish_reason: c.finish_reason ?? null,
      native_finish_reason: c.native_finish_reason ?? null,
      logprobs: c.logprobs ?? null,
    })),
  };
}

/**
 * What every content chunk of one response starts with, as JSON text up to the choices' opening
 * bracket: serialised once per response (and again only if the fingerprint appears), not per chunk.
 */
export function chunkHead(identity: ResponseIdentity, systemFingerprint: string | null): string {
  // Not a string (null; undefined past the type): no key, as renderChunk's object serialises.
  const fingerprint =
    typeof systemFingerprint === 'string' ? `"system_fingerprint":${JSON.stringify(systemFingerprint)},` : '';
  return (
    `{"id":${JSON.stringify(identity.id)},"object":"chat.completion.chunk","created":${JSON.stringify(identity.created)},` +
    `"model":${JSON.stringify(identity.model)},"provider":${JSON.stringify(identity.provider)},${fingerprint}"choices":[`
  );
}

/**
 * `JSON.stringify(renderChunk(identity, choices, fingerprint))`, from `chunkHead(identity,
 * fingerprint)`: the same text (property-tested), without building the chunk and serialising its
 * fixed fields for every event of a stream. One line: every value goes through JSON.stringify.
 */
export function chunkJson(head: string, choices: readonly ChunkChoice[]): string {
  let json = head;
  for (let i = 0; i < choices.length; i++) {
    const c = choices[i]!;
    if (i > 0) json += ',';
    json +=
      `{"index":${JSON.stringify(c.index)},"delta":${JSON.stringify(c.delta)},` +
      `"finish_reason":${JSON.stringify(c.finish_reason ?? null)},` +
      `"native_finish_reason":${JSON.stringify(c.native_finish_reason ?? null)},` +
      `"logprobs":${c.logprobs === undefined ? 'null' : JSON.stringify(c.logprobs)}}`;
  }
  return `${json}]}`;
}

export function renderUsageChunk(identity: ResponseIdentity, charge: Charge) {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    provider: identity.provider,
    choices: [],
    usage: renderUsage(charge),
  };
}

export function renderErrorChunk(
  identity: ResponseIdentity,
  status: number,
  message: string,
  metadata: { error_type: ErrorType; provider_code?: string },
  /** What the broken answer was charged, when it was (content was generated and the charge recorded). */
  charge: Charge | null = null,
) {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    provider: identity.provider,
    error: { code: status, message, metadata },
    // `logprobs` as on every other chunk (req,null in docs/api.md).
    choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error', native_finish_reason: null, logprobs: null }],
    ...(charge ? { usage: renderUsage(charge) } : {}),
  };
}
