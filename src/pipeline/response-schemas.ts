/**
 * The API's response bodies as zod schemas (docs/api.md). They are not used to serialise anything:
 * the OpenAPI document (`GET /api/v1/openapi.json`, http/openapi.ts) is generated from them, the
 * renderers annotate their results with their types, and the integration tests check every JSON
 * answer a test gateway gives against the document, so the reference cannot drift from what is sent.
 *
 * `z.object` is strict in the document (`additionalProperties: false`): a field added to an answer
 * without its schema fails the tests. Objects that carry an upstream's own fields are loose.
 */
import { z } from 'zod';
import { ERROR_TYPES } from '../core/errors.js';

const usd = z.number().meta({ description: 'USD (exact to 1e-9)' });
const isoTime = z.iso.datetime({ offset: true });
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const keyHash = z.string().regex(/^[0-9a-f]{64}$/);
const limitReset = z.enum(['daily', 'weekly', 'monthly']).nullable();

// --- Errors -------------------------------------------------------------------------------------

export const errorResponse = z
  .object({
    error: z.object({
      code: z.int().min(400).max(599).meta({ description: 'The HTTP status' }),
      message: z.string().min(1),
      metadata: z
        .looseObject({ error_type: z.enum(ERROR_TYPES).optional() })
        .optional()
        .meta({ description: 'Details by error: provider_name, raw, error_type, reasons, …' }),
    }),
  })
  .meta({ id: 'Error', description: 'Every error answer (docs/api.md, "Errors")' });

export const deletedResponse = z.object({ deleted: z.literal(true) }).meta({ id: 'Deleted' });

// --- Keys and accounts --------------------------------------------------------------------------

const keyUsageFields = {
  usage: usd,
  usage_daily: usd,
  usage_weekly: usd,
  usage_monthly: usd,
  byok_usage: usd,
  byok_usage_daily: usd,
  byok_usage_weekly: usd,
  byok_usage_monthly: usd,
};

const keyLimitFields = {
  limit: usd.nullable(),
  limit_remaining: usd.nullable(),
  limit_reset: limitReset,
  include_byok_in_limit: z.boolean(),
};

export const apiKeySchema = z
  .object({
    hash: keyHash,
    name: z.string(),
    label: z.string(),
    disabled: z.boolean(),
    ...keyLimitFields,
    ...keyUsageFields,
    created_at: isoTime.nullable(),
    updated_at: isoTime.nullable(),
    expires_at: isoTime.nullable(),
    creator_user_id: z.string().nullable(),
    external_user: z.string().nullable(),
    workspace_id: z.string().nullable(),
    is_management_key: z.boolean(),
    allowed_models: z.array(z.string()).nullable(),
    allowed_providers: z.array(z.string()).nullable(),
  })
  .meta({ id: 'ApiKey' });

/** A key as the account's own listing shows it: with the OAuth app it was issued to, and whether it was reported compromised. */
export const ownedApiKeySchema = apiKeySchema
  .extend({
    app: z.object({ id: z.int(), name: z.string(), origin: z.string() }).nullable(),
    compromised: z.boolean(),
  })
  .meta({ id: 'OwnedApiKey' });

export const freeModelDailySchema = z.object({ limit: z.int(), used: z.int(), remaining: z.int() });

export const keyInfoSchema = z
  .object({
    label: z.string(),
    ...keyLimitFields,
    ...keyUsageFields,
    is_free_tier: z.boolean(),
    is_management_key: z.boolean(),
    is_provisioning_key: z.boolean(),
    free_model_daily_requests: freeModelDailySchema,
    rate_limit: z.object({ requests: z.int(), interval: z.string(), note: z.string() }),
    creator_user_id: z.string().nullable(),
    organization_id: z.null(),
    workspace_id: z.string().nullable(),
    allowed_data_regions: z.array(z.string()),
    expires_at: isoTime.nullable(),
  })
  .meta({ id: 'KeyInfo' });

export const accountSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    created_at: isoTime,
    total_credits: usd,
    total_purchased: usd,
    total_usage: usd,
    balance: usd,
    is_free_tier: z.boolean(),
  })
  .meta({ id: 'Account' });

export const accountOverviewSchema = accountSchema
  .extend({
    total_granted: usd.meta({ description: 'Credit limits granted to OAuth apps' }),
    free_model_daily_requests: freeModelDailySchema.nullable().meta({
      description:
        "Today's (UTC) free-model requests of the account; null when the gateway serves no free model, or its counters cannot be read right now",
    }),
  })
  .meta({ id: 'AccountOverview' });

export const appGrantSchema = z
  .object({
    id: z.string(),
    app: z.object({ id: z.int(), name: z.string(), origin: z.string() }),
    key_hash: keyHash,
    key_label: z.string(),
    key_name: z.string(),
    limit: usd.nullable(),
    limit_reset: limitReset,
    created_at: isoTime.nullable(),
    expires_at: isoTime.nullable(),
    disabled: z.boolean(),
  })
  .meta({ id: 'AppGrant' });

export const creditsSchema = z.object({ total_credits: usd, total_usage: usd }).meta({ id: 'Credits' });

export const notificationSettingsSchema = z
  .object({
    low_balance: z.object({ enabled: z.boolean(), threshold: usd }),
    key_limit: z.object({ enabled: z.boolean() }),
    key_expiry: z.object({ enabled: z.boolean() }),
  })
  .meta({ id: 'NotificationSettings' });

export const byokSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    label: z.string(),
    provider: z.string(),
    created_at: isoTime,
    updated_at: isoTime.nullable(),
    disabled: z.boolean(),
    is_byok_only: z.boolean(),
    is_fallback: z.boolean(),
    is_required: z.boolean(),
    sort_order: z.number(),
    allowed_api_key_hashes: z.array(z.string()).nullable(),
    allowed_models: z.array(z.string()).nullable(),
    allowed_user_ids: z.null(),
    declared_zdr: z.null(),
    workspace_id: z.null(),
  })
  .meta({ id: 'Byok' });

// --- Usage --------------------------------------------------------------------------------------

export const generationSchema = z
  .object({
    id: z.string(),
    created_at: isoTime,
    model: z.string(),
    origin: z.string(),
    total_cost: usd,
    usage: usd,
    is_byok: z.boolean(),
    data_region: z.string(),
    api_type: z.string(),
    app_id: z.null(),
    app_title: z.string().nullable(),
    cache_discount: z.null(),
    cancelled: z.boolean(),
    external_user: z.string().nullable(),
    finish_reason: z.string().nullable(),
    generation_time: z.number().nullable(),
    http_referer: z.string().nullable(),
    latency: z.number().nullable(),
    moderation_latency: z.number().nullable(),
    native_finish_reason: z.string().nullable(),
    native_tokens_cached: z.int().nullable(),
    native_tokens_completion: z.int(),
    native_tokens_completion_images: z.null(),
    native_tokens_prompt: z.int(),
    native_tokens_reasoning: z.int().nullable(),
    num_fetches: z.null(),
    num_input_audio_prompt: z.null(),
    num_media_completion: z.null(),
    num_media_prompt: z.null(),
    num_search_results: z.null(),
    preset_id: z.null(),
    provider_name: z.string().nullable(),
    provider_responses: z.array(
      z.object({ provider_name: z.string(), status: z.int().nullable(), latency: z.number() }),
    ),
    router: z.null(),
    service_tier: z.null(),
    streamed: z.boolean(),
    tokens_completion: z.int(),
    tokens_prompt: z.int(),
    upstream_id: z.string().nullable(),
    upstream_inference_cost: usd,
    usage_estimated: z.boolean(),
    user_agent: z.string().nullable(),
    web_search_engine: z.null(),
    workspace_id: z.string(),
  })
  .meta({ id: 'Generation' });

const usageSums = {
  usage: usd,
  byok_usage: usd,
  requests: z.int(),
  prompt_tokens: z.int(),
  completion_tokens: z.int(),
  reasoning_tokens: z.int(),
};

export const activityResponse = z
  .object({
    data: z.array(
      z.object({
        date: day,
        model: z.string(),
        model_permaslug: z.string(),
        endpoint_id: z.string(),
        provider_name: z.string(),
        usage: usd,
        byok_usage_inference: usd,
        requests: z.int(),
        prompt_tokens: z.int(),
        completion_tokens: z.int(),
        reasoning_tokens: z.int(),
      }),
    ),
  })
  .meta({ id: 'Activity' });

export const dailyActivityResponse = z
  .object({
    data: z.array(z.object({ date: day, group: z.string(), group_label: z.string(), ...usageSums })),
  })
  .meta({ id: 'DailyActivity' });

export const recentGenerationsResponse = z
  .object({
    data: z.array(
      z.object({
        id: z.string(),
        created_at: isoTime,
        model: z.string(),
        provider_name: z.string().nullable(),
        app: z.object({ name: z.string(), origin: z.string() }).nullable(),
        key_label: z.string().nullable(),
        key_name: z.string().nullable(),
        tokens_prompt: z.int(),
        tokens_completion: z.int(),
        total_cost: usd,
        latency: z.number().nullable(),
        finish_reason: z.string().nullable(),
        streamed: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'RecentGenerations' });

export const creditHistoryResponse = z
  .object({
    data: z.array(
      z.object({
        id: z.string(),
        kind: z.string(),
        amount: usd,
        reference: z.string().nullable(),
        created_at: isoTime,
      }),
    ),
  })
  .meta({ id: 'CreditHistory' });

// --- Rankings -----------------------------------------------------------------------------------

const datasetMeta = z.object({ as_of: isoTime, start_date: day, end_date: day, version: z.literal('v1') });
const tokenCount = z.string().regex(/^\d+$/).meta({ description: 'A whole number as a decimal string' });

export const appRankingsResponse = z
  .object({
    data: z.array(
      z.object({
        app_id: z.int(),
        app_name: z.string(),
        rank: z.int(),
        total_requests: z.int(),
        total_tokens: tokenCount,
      }),
    ),
    meta: datasetMeta,
  })
  .meta({ id: 'AppRankings' });

export const rankingsDailyResponse = z
  .object({
    data: z.array(z.object({ date: day, model_permaslug: z.string(), total_tokens: tokenCount })),
    meta: datasetMeta,
  })
  .meta({ id: 'RankingsDaily' });

export const rankingsSummaryResponse = z
  .object({
    data: z.object({
      period: z.enum(['day', 'week', 'month']),
      start_date: day,
      end_date: day,
      apps: z.array(
        z.object({
          rank: z.int(),
          name: z.string(),
          origin: z.string(),
          total_tokens: z.number(),
          requests: z.int(),
        }),
      ),
      models: z.array(
        z.object({ rank: z.int(), model: z.string(), name: z.string(), total_tokens: z.number(), requests: z.int() }),
      ),
    }),
  })
  .meta({ id: 'RankingsSummary' });

// --- Catalog ------------------------------------------------------------------------------------

const price = z.string().meta({ description: 'USD per token, a decimal string' });
const pricing = z.object({
  prompt: price,
  completion: price,
  request: price,
  image: price,
  input_cache_read: price.optional(),
  input_cache_write: price.optional(),
});
const modalities = {
  modality: z.string(),
  input_modalities: z.array(z.string()),
  output_modalities: z.array(z.string()),
  instruct_type: z.string().nullable(),
};
const percentiles = z.object({ p50: z.number(), p75: z.number(), p90: z.number(), p99: z.number() });
const perMinute = z.object({ requests_per_minute: z.int().nullable(), tokens_per_minute: z.int().nullable() });

export const modelSchema = z
  .object({
    id: z.string(),
    canonical_slug: z.string(),
    hugging_face_id: z.null(),
    name: z.string(),
    created: z.int(),
    description: z.string(),
    context_length: z.int(),
    architecture: z.object({ ...modalities, tokenizer: z.string().optional() }),
    pricing,
    top_provider: z.object({
      is_moderated: z.boolean(),
      context_length: z.int(),
      max_completion_tokens: z.int().nullable(),
    }),
    per_request_limits: z.null(),
    supported_parameters: z.array(z.string()),
    default_parameters: z.null(),
    supported_voices: z.null(),
    links: z.object({ details: z.string() }),
  })
  .meta({ id: 'Model' });

export const modelsResponse = z
  .object({
    data: z.array(modelSchema),
    links: z.object({
      next: z
        .string()
        .nullable()
        .describe('The next page (the same parameters, `offset` moved on), or null on the last'),
    }),
    total_count: z.int(),
  })
  .meta({ id: 'ModelList' });

export const modelResponse = z.object({ data: modelSchema }).meta({ id: 'ModelResponse' });

export const modelCountResponse = z.object({ data: z.object({ count: z.int() }) }).meta({ id: 'ModelCount' });

export const endpointSchema = z
  .object({
    name: z.string(),
    model_id: z.string(),
    model_name: z.string(),
    provider_name: z.string(),
    tag: z.string(),
    context_length: z.int(),
    max_completion_tokens: z.int().nullable(),
    max_prompt_tokens: z.null(),
    pricing,
    quantization: z.string().nullable(),
    supported_parameters: z.array(z.string()),
    supports_implicit_caching: z.boolean(),
    supports_tool_choice: z.object({
      auto: z.boolean(),
      none: z.boolean(),
      required: z.boolean(),
      function: z.boolean(),
    }),
    status: z.int(),
    rate_limits: z.object({ endpoint: perMinute.nullable(), model: perMinute.nullable() }),
    uptime_last_5m: z.number().nullable(),
    uptime_last_30m: z.number().nullable(),
    uptime_last_1d: z.number().nullable(),
    latency_last_30m: percentiles.nullable().meta({ description: 'ms to the first token' }),
    throughput_last_30m: percentiles.nullable().meta({ description: 'tokens per second' }),
  })
  .meta({ id: 'Endpoint' });

export const modelEndpointsResponse = z
  .object({
    data: z.object({
      id: z.string(),
      name: z.string(),
      created: z.int(),
      description: z.string(),
      architecture: z.object({ ...modalities, tokenizer: z.string().nullable() }),
      endpoints: z.array(endpointSchema),
    }),
  })
  .meta({ id: 'ModelEndpoints' });

export const endpointsResponse = z.object({ data: z.array(endpointSchema) }).meta({ id: 'EndpointList' });

export const providersResponse = z
  .object({
    data: z.array(
      z.object({
        name: z.string(),
        slug: z.string(),
        privacy_policy_url: z.string().nullable(),
        terms_of_service_url: z.null(),
        status_page_url: z.null(),
      }),
    ),
  })
  .meta({ id: 'ProviderList' });

// --- Chat completions ---------------------------------------------------------------------------

export const usageSchema = z
  .object({
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
    total_tokens: z.int(),
    cost: usd,
    is_byok: z.boolean(),
    prompt_tokens_details: z.object({ cached_tokens: z.int(), cache_write_tokens: z.int().optional() }),
    completion_tokens_details: z.object({ reasoning_tokens: z.int() }),
    cost_details: z.object({
      upstream_inference_cost: usd,
      upstream_inference_prompt_cost: usd,
      upstream_inference_completions_cost: usd,
    }),
  })
  .meta({ id: 'Usage' });

/** The assistant's message as the provider produced it (content, tool_calls, reasoning, refusal, …). */
const assistantMessage = z.looseObject({ role: z.literal('assistant'), content: z.string().nullable().optional() });

/** One token of `logprobs.content` / `logprobs.refusal`, as the provider reported it. */
const tokenLogprobs = z.array(
  z.looseObject({
    token: z.string(),
    logprob: z.number(),
    bytes: z.array(z.int()).nullable().optional(),
    top_logprobs: z.array(z.looseObject({ token: z.string(), logprob: z.number() })).optional(),
  }),
);

/** The provider's token log probabilities of a choice (asked for with `logprobs: true`), null without them. */
const choiceLogprobs = z
  .looseObject({ content: tokenLogprobs.nullable().optional(), refusal: tokenLogprobs.nullable().optional() })
  .nullable()
  .meta({
    id: 'ChoiceLogprobs',
    description: 'The provider’s `logprobs` (per chunk when streamed, all tokens when not); null without them',
  });

export const chatCompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.int(),
    model: z.string(),
    provider: z.string(),
    system_fingerprint: z.string().nullable(),
    choices: z.array(
      z.object({
        index: z.int(),
        message: assistantMessage,
        finish_reason: z.string().nullable(),
        native_finish_reason: z.string().nullable(),
        logprobs: choiceLogprobs,
      }),
    ),
    usage: usageSchema,
  })
  .meta({ id: 'ChatCompletion' });

export const chatCompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.int(),
    model: z.string(),
    provider: z.string(),
    system_fingerprint: z.string().optional(),
    choices: z.array(
      z.looseObject({
        index: z.int(),
        delta: z.looseObject({}),
        finish_reason: z.string().nullable(),
        native_finish_reason: z.string().nullable(),
        logprobs: choiceLogprobs.optional(),
      }),
    ),
    usage: usageSchema.optional(),
    error: errorResponse.shape.error.optional().meta({ description: 'An in-band error ends the stream' }),
  })
  .meta({
    id: 'ChatCompletionChunk',
    description: 'One `data:` event of a streamed answer (`text/event-stream`), before the final `data: [DONE]`',
  });

// --- Sign-in, OAuth, password reset ---------------------------------------------------------------

const sessionData = z.object({
  account: z.object({ id: z.string(), email: z.string() }),
  csrf_token: z.string(),
  expires_at: isoTime,
});

export const sessionResponse = z.object({ data: sessionData }).meta({ id: 'Session' });

export const sessionStatusResponse = z.object({ data: sessionData.nullable() }).meta({ id: 'SessionStatus' });

export const authorizationPreviewSchema = z
  .object({
    app: z.object({ origin: z.string(), name: z.string() }),
    callback_url: z.string(),
    key_label: z.string().nullable(),
    code_challenge_method: z.string().nullable(),
    limit: usd.nullable(),
    usage_limit_type: limitReset,
    expires_at: isoTime.nullable(),
  })
  .meta({ id: 'AuthorizationPreview' });

// --- Operators ----------------------------------------------------------------------------------

export const outboxEntrySchema = z
  .object({
    id: z.string(),
    kind: z.string(),
    to: z.string(),
    subject: z.string(),
    message_id: z.string(),
    created_at: isoTime,
    attempts: z.int(),
    status: z.enum(['pending', 'failed']),
    next_attempt_at: isoTime.nullable(),
    failed_at: isoTime.nullable(),
    last_error: z.string().nullable(),
  })
  .meta({ id: 'OutboxEntry' });

const journalStatus = z
  .object({
    depth: z.int(),
    oldest_entry_age_ms: z.number().nullable(),
    backlog: z.int(),
    writable: z.boolean(),
  })
  .nullable();

export const readinessSchema = z
  .object({
    status: z.enum(['ready', 'degraded', 'unavailable', 'shutting_down']),
    store: z.enum(['sqlite', 'postgres']).optional(),
    redis: z.enum(['ok', 'unavailable', 'resyncing']).optional(),
    reasons: z.array(z.string()).optional(),
    journal: journalStatus.optional(),
  })
  .meta({ id: 'Readiness' });
