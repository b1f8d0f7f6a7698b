/**
 * The catalog: models, their endpoints (model × provider) and prices, resolved once from the config.
 * Pure data; the read APIs render it and the planner picks endpoints from it.
 */
import { DEFAULT_SUPPORTED_PARAMETERS, type Config, type ModelConfig, type ProviderConfig } from '../config/schema.js';
import { isZeroPrice, parsePricePerToken, type TokenPrices } from '../core/money.js';
import { unsentParameters } from '../providers/registry.js';
import type { ProviderKind } from '../providers/types.js';

export interface CatalogProvider {
  id: string;
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  apiKey: string | null;
  headers: Readonly<Record<string, string>>;
  privacyPolicyUrl: string | null;
  streamUpstream: boolean;
  /** A whole answer's choice without a finish reason: a cut answer (`invalid`) or finished (`stop`); config of the same name. */
  wholeAnswerWithoutFinishReason: 'invalid' | 'stop';
  /** Upstream connections speak HTTP/2 only (`providers[].http2`; the provider's agent in main.ts). */
  http2: boolean;
  timeouts: AttemptTimeouts;
  /** Account holders' own keys are accepted and used (config `byok: true`, validated to have an operator key); absent = no. */
  byok?: boolean;
  /** The id and display name, lower-cased once: how callers' `provider.order/only/ignore` entries match it. */
  names: readonly string[];
  /** What the provider's endpoints do with prompts unless an endpoint declares its own (config `data_collection`, `zdr`). */
  dataPolicy: DataPolicy;
}

/** `dataCollection: 'deny'`: neither stores nor trains on prompts. Undeclared: `allow`, not ZDR (excluded by either filter). */
export type DataPolicy = Readonly<{ dataCollection: 'allow' | 'deny'; zdr: boolean }>;

function dataPolicyOf(config: {
  data_collection?: 'allow' | 'deny' | undefined;
  zdr?: boolean | undefined;
}): DataPolicy {
  const zdr = config.zdr === true;
  // Retaining nothing, a ZDR endpoint cannot train on anything either (the schema refuses zdr with `allow`).
  return Object.freeze({ dataCollection: config.data_collection ?? (zdr ? 'deny' : 'allow'), zdr });
}

export type AttemptTimeouts = Readonly<{
  connect_ms: number;
  first_token_ms: number;
  idle_ms: number;
  response_ms: number;
}>;

export interface CatalogEndpoint {
  provider: CatalogProvider;
  upstreamModel: string;
  prices: TokenPrices;
  /** The decimal strings as configured, for rendering. */
  pricing: Readonly<{
    prompt: string;
    completion: string;
    request: string;
    input_cache_read?: string;
    input_cache_write?: string;
    input_cache_write_1h?: string;
  }>;
  contextLength: number;
  maxCompletionTokens: number | null;
  quantization: string | null;
  supportedParameters: readonly string[];
  /** Continues a trailing assistant message (used for mid-stream continuation). */
  supportsPrefill: boolean;
  /** The provider's timeouts with the model's and then the endpoint's overrides applied. */
  timeouts: AttemptTimeouts;
  /** Capacity limits of this endpoint (requests / tokens per minute, fleet-wide); null = none. */
  limits: CapacityLimits | null;
  /** The endpoint's own declaration when it has one, else its provider's. */
  dataPolicy: DataPolicy;
}

export interface CapacityLimits {
  rpm: number | null;
  tpm: number | null;
}

function capacityOf(limits: { rpm?: number | undefined; tpm?: number | undefined } | undefined): CapacityLimits | null {
  return limits && (limits.rpm !== undefined || limits.tpm !== undefined)
    ? { rpm: limits.rpm ?? null, tpm: limits.tpm ?? null }
    : null;
}

export interface CatalogModel {
  id: string;
  name: string;
  description: string;
  created: number;
  contextLength: number;
  inputModalities: readonly string[];
  outputModalities: readonly string[];
  tokenizer: string | null;
  instructType: string | null;
  supportedParameters: readonly string[];
  /** A `:free` model: zero-priced and under the free-model rate limits. */
  isFree: boolean;
  /** Capacity limits of the model over all its endpoints; null = none. */
  limits: CapacityLimits | null;
  endpoints: readonly CatalogEndpoint[];
}

export interface Catalog {
  models: ReadonlyMap<string, CatalogModel>;
  providers: ReadonlyMap<string, CatalogProvider>;
}

function toProvider(config: ProviderConfig, demoBaseUrl: string | null): CatalogProvider {
  const baseUrl = config.kind === 'demo' ? demoBaseUrl : config.base_url;
  if (!baseUrl) throw new Error(`provider ${config.id}: no base URL (the demo provider must be started first)`);
  return {
    id: config.id,
    name: config.name,
    // The demo provider is the simulated OpenAI-compatible server on loopback.
    kind: config.kind === 'demo' ? 'openai' : config.kind,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey: config.api_key ?? null,
    headers: config.headers,
    privacyPolicyUrl: config.privacy_policy_url,
    streamUpstream: config.stream_upstream,
    wholeAnswerWithoutFinishReason: config.whole_answer_without_finish_reason,
    http2: config.http2,
    timeouts: config.timeouts,
    byok: config.byok === true && config.kind !== 'demo' && !!config.api_key,
    names: [...new Set([config.id.toLowerCase(), config.name.toLowerCase()])],
    dataPolicy: dataPolicyOf(config),
  };
}

/**
 * What an endpoint supports: what its config declares (or the default list), less what its provider
 * kind's translation never sends — an Anthropic endpoint listing `response_format` without
 * `structured_outputs` would let `require_parameters` route a structured-output request to it and
 * answer prose.
 */
function supportedBy(kind: ProviderKind, declared: readonly string[]): readonly string[] {
  const unsent = unsentParameters(kind, declared);
  // `structured_outputs` says `response_format: json_schema` is honoured: not where it is never sent.
  // `n` never: the gateway refuses `n` > 1 whatever the endpoint (one answer is held and charged).
  const gone = unsent.includes('response_format') ? [...unsent, 'structured_outputs', 'n'] : [...unsent, 'n'];
  return declared.filter((name) => !gone.includes(name));
}

/** OpenRouter's reasoning fields: `reasoning`, and the legacy `reasoning_effort` and `include_reasoning`. */
export const REASONING_FIELDS: readonly string[] = ['reasoning', 'reasoning_effort', 'include_reasoning'];

/**
 * Whether an endpoint takes a parameter as routing sees it (`require_parameters`): listed by name, and
 * for `reasoning` (what a request naming any reasoning field requires) any of the reasoning fields.
 */
export function endpointTakes(endpoint: Pick<CatalogEndpoint, 'supportedParameters'>, name: string): boolean {
  if (name === 'reasoning') return REASONING_FIELDS.some((field) => endpoint.supportedParameters.includes(field));
  return endpoint.supportedParameters.includes(name);
}

function toModel(config: ModelConfig, providers: ReadonlyMap<string, CatalogProvider>, bootTime: number): CatalogModel {
  const endpoints = config.endpoints.map((endpoint): CatalogEndpoint => {
    const provider = providers.get(endpoint.provider);
    if (!provider) throw new Error(`model ${config.id}: unknown provider ${endpoint.provider}`);
    return {
      provider,
      upstreamModel: endpoint.model,
      prices: {
        prompt: parsePricePerToken(endpoint.pricing.prompt),
        completion: parsePricePerToken(endpoint.pricing.completion),
        request: parsePricePerToken(endpoint.pricing.request),
        ...(endpoint.pricing.input_cache_read === undefined
          ? {}
          : { cacheRead: parsePricePerToken(endpoint.pricing.input_cache_read) }),
        ...(endpoint.pricing.input_cache_write === undefined
          ? {}
          : { cacheWrite: parsePricePerToken(endpoint.pricing.input_cache_write) }),
        ...(endpoint.pricing.input_cache_write_1h !== undefined
          ? { cacheWrite1h: parsePricePerToken(endpoint.pricing.input_cache_write_1h) }
          : provider.kind === 'anthropic'
            ? { cacheWrite1h: 2n * parsePricePerToken(endpoint.pricing.prompt) }
            : {}),
      },
      pricing: endpoint.pricing,
      contextLength: endpoint.context_length ?? config.context_length,
      maxCompletionTokens: endpoint.max_completion_tokens,
      quantization: endpoint.quantization,
      supportedParameters: supportedBy(
        provider.kind,
        endpoint.supported_parameters ?? config.supported_parameters ?? DEFAULT_SUPPORTED_PARAMETERS,
      ),
      supportsPrefill: endpoint.supports_prefill,
      timeouts: Object.freeze({ ...provider.timeouts, ...config.timeouts, ...endpoint.timeouts }),
      limits: capacityOf(endpoint.limits),
      dataPolicy:
        endpoint.data_collection !== undefined || endpoint.zdr !== undefined
          ? dataPolicyOf(endpoint)
          : provider.dataPolicy,
    };
  });
  const isFree = config.id.endsWith(':free');
  if (isFree && endpoints.some((e) => !isZeroPrice(e.prices))) {
    throw new Error(`model ${config.id}: a :free model must have zero prices on every endpoint`);
  }
  return {
    id: config.id,
    name: config.name,
    description: config.description,
    created: config.created ?? Math.floor(bootTime / 1000),
    contextLength: config.context_length,
    inputModalities: config.input_modalities,
    outputModalities: config.output_modalities,
    tokenizer: config.tokenizer,
    instructType: config.instruct_type,
    // What /models shows and filters by: what its endpoints take (any of them), as routing sees it —
    // the model's own list less what each provider kind never sends (Anthropic's seed, its
    // response_format without structured_outputs, Gemini's logprobs), so `require_parameters` never refuses what /models advertised.
    supportedParameters: [...new Set(endpoints.flatMap((endpoint) => endpoint.supportedParameters))],
    isFree,
    limits: capacityOf(config.limits),
    endpoints,
  };
}

export function buildCatalog(
  config: Pick<Config, 'providers' | 'models'>,
  options: { demoBaseUrl?: string | null; now?: number } = {},
): Catalog {
  const providers = new Map<string, CatalogProvider>();
  for (const provider of config.providers)
    providers.set(provider.id, toProvider(provider, options.demoBaseUrl ?? null));
  const models = new Map<string, CatalogModel>();
  for (const model of config.models) models.set(model.id, toModel(model, providers, options.now ?? Date.now()));
  return { models, providers };
}

/** The model's cheapest list price (what `/models` shows as the model's pricing). */
export function primaryEndpoint(model: CatalogModel): CatalogEndpoint {
  const [first] = model.endpoints;
  if (!first) throw new Error(`model ${model.id} has no endpoints`);
  return model.endpoints.reduce(
    (best, e) => (e.prices.prompt + e.prices.completion < best.prices.prompt + best.prices.completion ? e : best),
    first,
  );
}
