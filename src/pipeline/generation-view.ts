/** The generation record as `GET /generation` returns it (docs/api.md; every required key present). */
import type { z } from 'zod';
import type { generationSchema } from './response-schemas.js';
import { TollgateError } from '../core/errors.js';
import { unitsToUsd } from '../core/money.js';
import type { GenerationRecord, Store } from '../store/types.js';

const GENERATION_ID_CHARS = /^[\x21-\x7e]+$/;

/** One of the account's generations, rendered; another account's is indistinguishable from a missing one. */
export async function generationOf(deps: { store: Store }, accountId: string, id: string) {
  if (id.length === 0) throw new TollgateError('request.invalid_body', 'Query parameter "id" is required');
  // Ids are printable ASCII: anything else (a NUL, which PostgreSQL's text cannot even hold) is not one.
  const generation = id.length <= 200 && GENERATION_ID_CHARS.test(id) ? await deps.store.getGeneration(id) : null;
  if (!generation || generation.accountId !== accountId)
    throw new TollgateError('resource.not_found', `Generation ${id.slice(0, 200)} not found`);
  return renderGeneration(generation);
}

export function renderGeneration(g: GenerationRecord): z.output<typeof generationSchema> {
  return {
    id: g.id,
    created_at: new Date(g.createdAt).toISOString(),
    model: g.model,
    origin: g.httpReferer ?? '',
    total_cost: unitsToUsd(g.totalCost),
    usage: unitsToUsd(g.totalCost),
    is_byok: g.isByok,
    data_region: 'global',
    api_type: 'completions',
    app_id: null,
    app_title: g.appTitle,
    cache_discount: null,
    cancelled: g.cancelled,
    external_user: g.externalUser,
    finish_reason: g.finishReason,
    generation_time: g.generationTimeMs,
    http_referer: g.httpReferer,
    latency: g.latencyMs,
    moderation_latency: g.moderationLatencyMs ?? null,
    native_finish_reason: g.nativeFinishReason,
    native_tokens_cached: g.tokensCached,
    native_tokens_completion: g.tokensCompletion,
    native_tokens_completion_images: null,
    native_tokens_prompt: g.tokensPrompt,
    native_tokens_reasoning: g.tokensReasoning,
    num_fetches: null,
    num_input_audio_prompt: null,
    num_media_completion: null,
    num_media_prompt: null,
    num_search_results: null,
    preset_id: null,
    provider_name: g.providerName,
    provider_responses: g.providerResponses,
    router: null,
    service_tier: null,
    streamed: g.streamed,
    tokens_completion: g.tokensCompletion,
    tokens_prompt: g.tokensPrompt,
    upstream_id: g.upstreamId,
    upstream_inference_cost: unitsToUsd(g.upstreamPromptCost + g.upstreamCompletionCost),
    usage_estimated: g.usageEstimated,
    user_agent: g.userAgent,
    web_search_engine: null,
    workspace_id: 'default',
  };
}
