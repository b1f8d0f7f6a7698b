/**
 * One schema for the YAML file; environment variables are folded in by `load-config.ts`.
 * Validated once at boot (every problem reported together), then deep-frozen.
 */
import { z } from 'zod';
import { parsePricePerToken } from '../core/money.js';
import { moderationSchema } from './moderation-schema.js';
import { accountsSchema } from './accounts-schema.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be a lowercase slug (a-z, 0-9, ., _, -)');
const priceString = z
  .union([z.string(), z.number()])
  .transform((value) => (typeof value === 'number' ? value.toFixed(15).replace(/\.?0+$/, '') : value))
  .refine((value) => {
    try {
      parsePricePerToken(value);
      return true;
    } catch {
      return false;
    }
  }, 'must be a non-negative decimal USD-per-token price with at most 15 decimals');

const timeoutsSchema = z
  .object({
    /** Connect + response headers. */
    connect_ms: z.number().int().positive().default(10_000),
    /** From response headers to the first content token. */
    first_token_ms: z.number().int().positive().default(30_000),
    /** Longest silence between stream events once streaming (and between body bytes otherwise). */
    idle_ms: z.number().int().positive().default(60_000),
    /** A non-streamed answer arrives whole: the budget for it, from sending the request. */
    response_ms: z.number().int().positive().default(300_000),
  })
  .strict();

export const providerSchema = z
  .object({
    id: slug,
    name: z.string().min(1),
    kind: z.enum(['openai', 'anthropic', 'gemini', 'demo']),
    base_url: z.string().url().optional(),
    api_key: z.string().optional(),
    headers: z.record(z.string(), z.string()).default({}),
    privacy_policy_url: z.string().url().nullable().default(null),
    /** Serve non-streamed requests from an upstream stream (timeouts bound them; mid-answer failures fail over). Off for providers that cannot stream. */
    stream_upstream: z.boolean().default(true),
    timeouts: timeoutsSchema.default(() => timeoutsSchema.parse({})),
  })
  .strict()
  .superRefine((provider, ctx) => {
    if (provider.kind !== 'demo' && !provider.base_url) {
      ctx.addIssue({ code: 'custom', message: `base_url is required for kind "${provider.kind}"`, path: ['base_url'] });
    }
  });

const pricingSchema = z
  .object({
    prompt: priceString,
    completion: priceString,
    request: priceString.default('0'),
  })
  .strict();

const endpointSchema = z
  .object({
    provider: slug,
    model: z.string().min(1),
    pricing: pricingSchema,
    context_length: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().nullable().default(null),
    quantization: z.string().nullable().default(null),
    supported_parameters: z.array(z.string()).optional(),
    /** The endpoint continues a trailing assistant message (prefill); default: true for `anthropic` providers. */
    supports_prefill: z.boolean().optional(),
  })
  .strict();

export const DEFAULT_SUPPORTED_PARAMETERS = [
  'max_tokens',
  'temperature',
  'top_p',
  'stop',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'response_format',
  'tools',
  'tool_choice',
];

const modelSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*(:[a-z0-9-]+)?$/, 'must look like "author/slug" or "author/slug:variant"'),
    name: z.string().min(1),
    description: z.string().default(''),
    created: z.number().int().nonnegative().optional(),
    context_length: z.number().int().positive(),
    input_modalities: z.array(z.string()).default(['text']),
    output_modalities: z.array(z.string()).default(['text']),
    tokenizer: z.string().nullable().default(null),
    instruct_type: z.string().nullable().default(null),
    supported_parameters: z.array(z.string()).default(DEFAULT_SUPPORTED_PARAMETERS),
    endpoints: z.array(endpointSchema).min(1),
  })
  .strict();

const freeModelLimitsSchema = z
  .object({
    per_minute: z.number().int().positive().default(20),
    per_day: z.number().int().positive().default(50),
    per_day_with_credits: z.number().int().positive().default(1000),
    credits_threshold: z.number().nonnegative().default(10),
    /** When the counters' store (Redis) is unreachable: refuse free requests (503) or let them through uncounted. */
    on_store_error: z.enum(['closed', 'open']).default('closed'),
  })
  .strict();

/** Per-client-IP token bucket in front of every `/api/v1` route (before authentication). */
const edgeSchema = z
  .object({
    /** Requests one client address may send at once; 0 disables the guard. */
    burst: z.number().int().nonnegative().default(200),
    /** Sustained requests per second per client address. */
    per_second: z.number().positive().default(100),
    /** Client addresses tracked at once (least recently seen dropped beyond it). */
    max_clients: z.number().int().positive().default(100_000),
  })
  .strict();

export const fileConfigSchema = z
  .object({
    providers: z.array(providerSchema).default([]),
    models: z.array(modelSchema).default([]),
    limits: z
      .object({
        free_models: freeModelLimitsSchema.default(() => freeModelLimitsSchema.parse({})),
        edge: edgeSchema.prefault({}),
        /** Prefix of every Redis key Tollgate writes (rate-limit counters live under `<prefix>rl:`). */
        redis_prefix: z.string().regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 : _ . -').default('tollgate:'),
      })
      .strict()
      .prefault({}),
    server: z
      .object({
        body_limit_bytes: z.number().int().positive().default(4 * 1024 * 1024),
        keep_alive_interval_ms: z.number().int().positive().default(15_000),
        shutdown_grace_ms: z.number().int().nonnegative().default(30_000),
        trust_proxy: z.boolean().default(false),
        /** Request line and headers must arrive within this (slow-loris). */
        headers_timeout_ms: z.number().int().positive().default(15_000),
        /** Headers and body must have arrived this long after the request's first byte; responses are not limited by it. */
        body_timeout_ms: z.number().int().positive().default(30_000),
        /** An idle kept-alive client connection is closed after this. */
        keep_alive_timeout_ms: z.number().int().positive().default(72_000),
      })
      .strict()
      .prefault({}),
    routing: z
      .object({
        /** Upstream attempts per request, over all endpoints and retries. */
        max_attempts: z.number().int().positive().default(6),
        /** No new attempt (or wait for one) starts later than this after the request arrived. */
        budget_ms: z.number().int().positive().default(60_000),
        /** Tries of one endpoint per request (the first plus retries after a backoff). */
        tries_per_endpoint: z.number().int().positive().default(2),
        /** Base of the jittered exponential backoff before retrying an endpoint. */
        retry_backoff_ms: z.number().int().nonnegative().default(250),
        /** An upstream Retry-After longer than this is not waited for: the next endpoint is tried, or the caller told. */
        max_retry_wait_ms: z.number().int().nonnegative().default(3_000),
        /** Stretch: when a stream dies after content was sent, continue the same answer on another endpoint that supports prefill. */
        mid_stream_continuation: z.boolean().default(false),
        breaker: z
          .object({
            failure_threshold: z.number().int().positive().default(3),
            open_ms: z.number().int().positive().default(5_000),
            max_open_ms: z.number().int().positive().default(15_000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    billing: z
      .object({
        /** Fee charged in credits on BYOK requests, as a percentage of the list price. */
        byok_fee_percent: z.number().min(0).max(100).default(5),
        /**
         * An in-flight credit hold lapses this long after its last renewal (renewed every third of it
         * while the request runs), so a process killed mid-request frees its holds within this time.
         */
        hold_ttl_ms: z.number().int().min(300).default(120_000),
      })
      .strict()
      .prefault({}),
    /** Public app and model rankings (`/api/v1/datasets/*`, `/api/v1/rankings/summary`); false → 404. */
    rankings: z
      .object({
        public: z.boolean().default(true),
        /** An app is listed only once this many accounts have used it, so that one account's volume is not published under its app's name. */
        min_accounts: z.number().int().min(1).default(1),
      })
      .strict()
      .prefault({}),
    /** Input moderation before forwarding (off by default); see moderation-schema.ts. */
    moderation: moderationSchema.prefault({}),
    /** Account holders: sign-up policy, sessions, sign-in limits (see accounts-schema.ts). */
    accounts: accountsSchema.prefault({}),
    cache: z
      .object({
        key_ttl_ms: z.number().int().positive().default(30_000),
        balance_ttl_ms: z.number().int().positive().default(2_000),
      })
      .strict()
      .default(() => ({ key_ttl_ms: 30_000, balance_ttl_ms: 2_000 })),
  })
  .strict();

export type FileConfig = z.output<typeof fileConfigSchema>;
export type ProviderConfig = FileConfig['providers'][number];
export type ModelConfig = FileConfig['models'][number];
export type EndpointConfig = ModelConfig['endpoints'][number];

export interface Config extends FileConfig {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  redisUrl: string | null;
  adminToken: string | null;
  /** AES-256-GCM master key for BYOK provider keys (TOLLGATE_MASTER_KEY); BYOK is disabled without it. */
  masterKey: string | null;
  /** Earlier master keys, still accepted for decryption after a rotation. */
  previousMasterKeys: string[];
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** True when no config file was given: built-in demo provider and catalog, first-start demo account. */
  demo: boolean;
  configPath: string | null;
}

/**
 * Cross-references (duplicate ids, endpoints naming unknown providers). Runs on the raw input, defensively,
 * so these problems are reported together with shape problems instead of after they are fixed.
 */
export function crossReferenceProblems(raw: unknown): string[] {
  const problems: string[] = [];
  const record = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  const root = record(raw);
  const providerIds = new Set<unknown>();
  list(root.providers).forEach((provider, i) => {
    const id = record(provider).id;
    if (providerIds.has(id)) problems.push(`providers.${i}.id: duplicate provider id "${String(id)}"`);
    providerIds.add(id);
  });
  const modelIds = new Set<unknown>();
  list(root.models).forEach((model, i) => {
    const id = record(model).id;
    if (modelIds.has(id)) problems.push(`models.${i}.id: duplicate model id "${String(id)}"`);
    modelIds.add(id);
    list(record(model).endpoints).forEach((endpoint, j) => {
      const provider = record(endpoint).provider;
      if (!providerIds.has(provider)) problems.push(`models.${i}.endpoints.${j}.provider: unknown provider "${String(provider)}"`);
    });
  });
  return problems;
}
