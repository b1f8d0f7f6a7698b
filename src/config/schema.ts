/**
 * One schema for the YAML file; environment variables are folded in by `load-config.ts`.
 * Validated once at boot (every problem reported together), then deep-frozen.
 */
import { z } from 'zod';
import { parsePricePerToken } from '../core/money.js';
import { credentialSchema, headersSchema } from './header-schemas.js';
import { moderationSchema } from './moderation-schema.js';
import { serverSchema } from './server-schema.js';
import { mailSchema, notificationsSchema, secretScanningSchema } from './mail-schema.js';
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
    /**
     * From response headers to the first content token. 10 s gives up on a silent ordinary chat
     * endpoint while a fallback can still answer quickly; slow (reasoning) models set more per model,
     * and the measured time to first token raises it (routing.adaptive_first_token).
     */
    first_token_ms: z.number().int().positive().default(10_000),
    /** Longest silence between stream events once streaming (and between body bytes otherwise). */
    idle_ms: z.number().int().positive().default(10_000),
    /** A non-streamed answer arrives whole: the budget for it, from sending the request. */
    response_ms: z.number().int().positive().default(300_000),
  })
  .strict();

/** The same budgets set per model or per endpoint: only what is given overrides the provider's. */
const timeoutOverridesSchema = z
  .object({
    connect_ms: z.number().int().positive().optional(),
    first_token_ms: z.number().int().positive().optional(),
    idle_ms: z.number().int().positive().optional(),
    response_ms: z.number().int().positive().optional(),
  })
  .strict();

/**
 * What a provider (or one endpoint) does with prompts, for the callers' `provider.data_collection` and
 * `provider.zdr` filters. Undeclared means the worst: it may store and train on prompts, and is not ZDR.
 * `zdr: true` implies `data_collection: deny` (retaining nothing, it cannot train on anything).
 */
const dataPolicyFields = {
  /** `deny`: neither stores prompts nor trains on them; `allow` (the default unless `zdr`): may do either. */
  data_collection: z.enum(['allow', 'deny']).optional(),
  /** Zero data retention: keeps nothing of a request once answered. */
  zdr: z.boolean().optional(),
};

function refineDataPolicy(
  policy: { data_collection?: 'allow' | 'deny' | undefined; zdr?: boolean | undefined },
  ctx: z.RefinementCtx,
): void {
  if (policy.zdr === true && policy.data_collection === 'allow') {
    ctx.addIssue({
      code: 'custom',
      message: 'zdr: true retains nothing, so it cannot be data_collection: allow',
      path: ['data_collection'],
    });
  }
}

export const providerSchema = z
  .object({
    id: slug,
    name: z.string().min(1),
    kind: z.enum(['openai', 'anthropic', 'gemini', 'demo']),
    base_url: z.string().url().optional(),
    api_key: credentialSchema.optional(),
    headers: headersSchema.default({}),
    privacy_policy_url: z.string().url().nullable().default(null),
    /** Serve non-streamed requests from an upstream stream (timeouts bound them; mid-answer failures fail over). Off for providers that cannot stream. */
    stream_upstream: z.boolean().default(true),
    /**
     * A whole (JSON) answer with a choice whose `finish_reason` is missing or null: `invalid` (the
     * default) takes it for a cut answer — the provider's invalid response, failed over or 502, not
     * charged; `stop` serves it as finished (`finish_reason: "stop"`), for a server known to leave
     * the field out of whole answers. Streams are not affected: one that ends before its finish is cut.
     */
    whole_answer_without_finish_reason: z.enum(['invalid', 'stop']).default('invalid'),
    /**
     * Speak HTTP/2 to this provider (h2c with prior knowledge for http:, h2 by ALPN for https:, no
     * fallback to HTTP/1.1): up to 100 requests share one connection, so 10,000 open streams need
     * ~100 upstream sockets, not 10,000. Off: HTTP/1.1, one request per connection at a time.
     */
    http2: z.boolean().default(false),
    timeouts: timeoutsSchema.default(() => timeoutsSchema.parse({})),
    /** Account holders may register their own key for this provider (BYOK). Off (absent) unless the operator opts in. */
    byok: z.boolean().optional(),
    ...dataPolicyFields,
  })
  .strict()
  .superRefine((provider, ctx) => {
    refineDataPolicy(provider, ctx);
    if (provider.kind !== 'demo' && !provider.base_url) {
      ctx.addIssue({ code: 'custom', message: `base_url is required for kind "${provider.kind}"`, path: ['base_url'] });
    }
    if (provider.http2 && provider.kind === 'demo') {
      ctx.addIssue({
        code: 'custom',
        message: 'http2: the built-in demo provider speaks HTTP/1.1 only',
        path: ['http2'],
      });
    }
    // A provider that checks no key (a local server, the demo) would take any junk "own key" and bill only the BYOK fee.
    if (provider.byok && provider.kind === 'demo') {
      ctx.addIssue({
        code: 'custom',
        message: 'byok: the demo provider checks no key, so BYOK cannot be enabled for it',
        path: ['byok'],
      });
    } else if (provider.byok && !provider.api_key) {
      ctx.addIssue({
        code: 'custom',
        message:
          "byok: true needs the operator's own api_key (a provider that checks no key cannot tell an own key from junk)",
        path: ['byok'],
      });
    }
  });

const pricingSchema = z
  .object({
    prompt: priceString,
    completion: priceString,
    request: priceString.default('0'),
    /** A prompt token read from the provider's prompt cache (absent: the prompt price). */
    input_cache_read: priceString.optional(),
    /** A prompt token written to the provider's prompt cache (absent: the prompt price). */
    input_cache_write: priceString.optional(),
    /**
     * A prompt token written to the cache for an hour (Anthropic's `cache_control: { ttl: "1h" }`).
     * Absent: on an Anthropic endpoint twice the prompt price (Anthropic's rate), else `input_cache_write`.
     */
    input_cache_write_1h: priceString.optional(),
  })
  .strict();

/**
 * Capacity limits (docs/api.md, "Capacity limits"): the upstream's quota, enforced across the fleet.
 * `rpm` requests and `tpm` tokens (prompt + completion) in any 60 s.
 */
const capacitySchema = z
  .object({
    rpm: z.number().int().positive().optional(),
    tpm: z.number().int().positive().optional(),
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
    /** The endpoint continues a trailing assistant message (prefill). Only declared endpoints are ever sent one. */
    supports_prefill: z.boolean().default(false),
    /** Timeouts of this endpoint; override the model's and the provider's. */
    timeouts: timeoutOverridesSchema.optional(),
    /** Capacity of this endpoint (the provider's quota for this model). */
    limits: capacitySchema.optional(),
    /** This endpoint's own data policy; when either field is given it replaces the provider's (omitted fields: the safe defaults). */
    ...dataPolicyFields,
  })
  .strict()
  .superRefine(refineDataPolicy);

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
    id: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*(:[a-z0-9-]+)?$/,
        'must look like "author/slug" or "author/slug:variant"',
      ),
    name: z.string().min(1),
    description: z.string().default(''),
    created: z.number().int().nonnegative().optional(),
    context_length: z.number().int().positive(),
    input_modalities: z.array(z.string()).default(['text']),
    output_modalities: z.array(z.string()).default(['text']),
    tokenizer: z.string().nullable().default(null),
    instruct_type: z.string().nullable().default(null),
    /** Unset: each endpoint's own list (or DEFAULT_SUPPORTED_PARAMETERS), and the model lists their union. */
    supported_parameters: z.array(z.string()).optional(),
    /** Timeouts of this model's endpoints (e.g. a long first_token_ms for a reasoning model); override the providers'. */
    timeouts: timeoutOverridesSchema.optional(),
    /** Capacity of the model over all its endpoints. */
    limits: capacitySchema.optional(),
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

/**
 * Edge protection before authentication: overload shedding by client address (on by default: no
 * address is capped while the gateway has capacity), and an optional static per-address token bucket.
 */
const edgeSchema = z
  .object({
    /** Static per-address bucket: requests one client address may send at once; 0 (default) = no static cap. */
    burst: z.number().int().nonnegative().default(0),
    /** Static per-address bucket: sustained requests per second per client address. */
    per_second: z.number().positive().default(100),
    /** Client addresses tracked at once (least recently seen dropped beyond it). */
    max_clients: z.number().int().positive().default(100_000),
    /** Under overload, refuse the addresses sending far more than their share first (see limits/load-shedder.ts). */
    overload: z
      .object({
        enabled: z.boolean().default(true),
        /** p99 event-loop delay over a 250 ms window beyond which the process counts as overloaded. */
        max_event_loop_delay_ms: z.number().positive().default(200),
        /**
         * Share of a 250 ms window the event loop spent working beyond which the process counts as
         * overloaded (saturated: requests queue though each turn is short); 1 turns the signal off.
         */
        max_event_loop_utilization: z.number().gt(0).max(1).default(0.9),
        /** Requests in flight beyond which the process counts as overloaded; default derived from the heap limit. */
        max_in_flight: z.number().int().positive().nullable().default(null),
        /** Share of V8's heap limit in use beyond which the process counts as overloaded. */
        max_heap_ratio: z.number().gt(0).max(1).default(0.85),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export const fileConfigSchema = z
  .object({
    providers: z.array(providerSchema).default([]),
    models: z.array(modelSchema).default([]),
    limits: z
      .object({
        free_models: freeModelLimitsSchema.default(() => freeModelLimitsSchema.parse({})),
        /** Capacity limits (models[].limits, models[].endpoints[].limits): when their store is unreachable, not enforced (`open`) or 503 (`closed`). */
        capacity: z
          .object({ on_store_error: z.enum(['open', 'closed']).default('open') })
          .strict()
          .prefault({}),
        edge: edgeSchema.prefault({}),
        /** Prefix of every Redis key Tollgate writes (rate-limit counters live under `<prefix>rl:`). */
        redis_prefix: z
          .string()
          .regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 : _ . -')
          .default('tollgate:'),
      })
      .strict()
      .prefault({}),
    server: serverSchema.prefault({}),
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
        /** When a stream dies after content was sent, continue the same answer on another endpoint that declares `supports_prefill`. */
        mid_stream_continuation: z.boolean().default(true),
        /**
         * Once an endpoint's time to first token has been measured (min_samples successes in the last
         * 30 min), its first-token limit is multiplier × that p99, never below the configured
         * first_token_ms and never above max_ms: a model that is slow by nature is not cut off, a
         * silent one is still given up on after the configured time.
         */
        adaptive_first_token: z
          .object({
            enabled: z.boolean().default(true),
            multiplier: z.number().min(1).max(100).default(3),
            min_samples: z.number().int().positive().default(20),
            max_ms: z.number().int().positive().default(120_000),
          })
          .strict()
          .prefault({}),
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
        hold_ttl_ms: z.number().int().min(300).default(10_000),
        /**
         * Paid requests while the shared hold store (Redis) is unreachable or resynchronising: `share`
         * admits each from its process's share of the balance (1/N, N = live processes last counted),
         * `closed` refuses them (503). docs/architecture.md, "Redis outages".
         */
        on_hold_store_error: z.enum(['share', 'closed']).default('share'),
        /** Paid requests while the store is unreachable: refused (503) or served within `grace`. */
        on_store_error: z.enum(['closed', 'grace']).default('closed'),
        /** Under `grace`: per account and per process, at most this much spent unvouched per outage, for at most this long. */
        grace: z
          .object({
            max_exposure_usd: z.number().nonnegative().max(1_000_000_000).default(1),
            max_duration_ms: z.number().int().positive().default(300_000),
          })
          .strict()
          .prefault({}),
        /** The local charge journal (TOLLGATE_DATA_DIR/journal). */
        journal: z
          .object({
            /** Live entries at which paid requests are refused (503) until the store catches up. */
            max_entries: z.number().int().positive().default(100_000),
            /** A running stream's usage is journaled this often, so a killed process still charges it. */
            checkpoint_ms: z.number().int().positive().default(5_000),
            /** Free space in TOLLGATE_DATA_DIR below which paid requests are refused (the journal and SQLite need it). */
            min_free_bytes: z
              .number()
              .int()
              .nonnegative()
              .default(64 * 1024 * 1024),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    /** Public app and model rankings (`/api/v1/datasets/*`, `/api/v1/rankings/summary`); false → 404. */
    rankings: z
      .object({
        public: z.boolean().default(true),
        /**
         * An app is listed only once this many accounts have used it (over all time: usage_app_accounts
         * keeps no day), so that a single account's app is not published under its name (with two,
         * each could read the other's off the total). Within a window its row may still be one
         * account's usage (docs/api.md §6).
         */
        min_accounts: z.number().int().min(1).default(3),
      })
      .strict()
      .prefault({}),
    /** Input moderation before forwarding (off by default); see moderation-schema.ts. */
    moderation: moderationSchema.prefault({}),
    /** Outgoing mail (SMTP from TOLLGATE_SMTP_URL); see mail-schema.ts. */
    mail: mailSchema.prefault({}),
    /** Exposed keys: the code host's report endpoint and keys found in chat requests. */
    secret_scanning: secretScanningSchema.prefault({}),
    /** Account holders' e-mail notifications (low balance, key limits, key expiry). */
    notifications: notificationsSchema.prefault({}),
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
  /** Bearer token `/metrics` requires (TOLLGATE_METRICS_TOKEN); open when null. */
  metricsToken: string | null;
  /** AES-256-GCM master key for BYOK provider keys (TOLLGATE_MASTER_KEY); BYOK is disabled without it. */
  masterKey: string | null;
  /** Earlier master keys, still accepted for decryption after a rotation. */
  previousMasterKeys: string[];
  /** `smtp://user:pass@host:587` or `smtps://…` (TOLLGATE_SMTP_URL); null: mail is recorded in the outbox, not sent. */
  smtpUrl: string | null;
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
  const record = (value: unknown): Record<string, unknown> =>
    value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
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
      if (!providerIds.has(provider))
        problems.push(`models.${i}.endpoints.${j}.provider: unknown provider "${String(provider)}"`);
    });
  });
  return problems;
}
