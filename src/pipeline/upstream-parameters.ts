/**
 * Which top-level request fields reach a provider (README "What is forwarded upstream"). An
 * allowlist: the OpenAI Chat Completions / OpenRouter parameters docs/api.md documents and the
 * adapters read, plus the extra names the operator lists in an endpoint's `supported_parameters`.
 * Fields that switch on provider features billed above the catalog price, or that keep data in the
 * operator's provider account, are refused unless every endpoint of the plan lists them (the
 * operator's statement that the endpoint's prices cover them). Anything else is dropped silently.
 */
import { TollgateError } from '../core/errors.js';
import { isRecord } from '../providers/json-shape.js';
import { EXCLUDE_REASONING, reasoningExcluded } from '../providers/openai-input.js';
import { endpointTakes, REASONING_FIELDS, type CatalogEndpoint } from '../routing/catalog.js';
import type { PlannedAttempt } from '../routing/plan.js';

/**
 * Forwarded to every endpoint: the conversation, its completion limit (always set, below) and tool use
 * (a request with `tools` is routed only to endpoints that list `tools`). Every other parameter goes
 * to an endpoint that lists it in `supported_parameters` — the documented ones (`temperature`,
 * `top_k`, `seed`, `logprobs`, …) as much as an operator's extras — and is dropped elsewhere, as
 * OpenRouter drops what a provider lacks: OpenAI's own API refuses an argument it does not know
 * (`top_k`, `repetition_penalty`) with a 400. Each adapter translates what its API has.
 */
export const ALWAYS_FORWARDED: ReadonlySet<string> = new Set([
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
]);

/**
 * Never forwarded, even when an operator lists them: OpenRouter's routing fields are ours to read
 * (legacy ones are ignored), and `model`, `stream` and `stream_options` are set by the adapters.
 */
export const NEVER_FORWARDED: ReadonlySet<string> = new Set([
  'model',
  'models',
  'provider',
  'stream',
  'stream_options',
  'usage',
  'transforms',
  'route',
  'plugins',
]);

interface CostlyFeature {
  /** Whether this value switches the feature on (`store: false`, `service_tier: "auto"` do not). */
  active(value: unknown): boolean;
  why: string;
}

/** Per field, decided one by one (README lists them). */
export const COSTLY_FEATURES: Readonly<Record<string, CostlyFeature>> = {
  service_tier: {
    active: (value) => value !== undefined && value !== null && value !== 'auto' && value !== 'default',
    why: 'tiers other than "auto" and "default" are billed above the catalog price',
  },
  store: { active: (value) => value === true, why: "it stores the conversation in the operator's provider account" },
  web_search_options: {
    active: (value) => value !== undefined && value !== null,
    why: 'web search is billed per request above the catalog price',
  },
  modalities: {
    active: (value) => Array.isArray(value) && value.some((m) => m !== 'text'),
    why: 'output modalities other than text are billed above the catalog price',
  },
  audio: {
    active: (value) => value !== undefined && value !== null,
    why: 'audio output is billed above the catalog price',
  },
  prediction: {
    active: (value) => value !== undefined && value !== null,
    why: 'rejected prediction tokens are billed as completion tokens beyond the answer the hold accounts for',
  },
};

function lists(endpoint: CatalogEndpoint, name: string): boolean {
  return endpoint.supportedParameters.includes(name);
}

/** 400 naming the first field that switches on a costly feature some endpoint of the plan has not enabled. */
export function refuseCostlyFeatures(
  request: Readonly<Record<string, unknown>>,
  plan: readonly PlannedAttempt[],
): void {
  for (const [name, feature] of Object.entries(COSTLY_FEATURES)) {
    if (!feature.active(request[name])) continue;
    const without = plan.find((p) => !lists(p.endpoint, name));
    if (!without) continue;
    throw new TollgateError(
      'request.invalid_body',
      `Invalid request: ${name}: not accepted by this gateway for ${without.model.id} (${feature.why})`,
      {
        metadata: { field: name },
      },
    );
  }
}

const LIMIT_FIELDS = ['max_completion_tokens', 'max_tokens'] as const;

/**
 * The body one attempt sends: the allowlisted fields, the endpoint's listed extras, and the completion
 * budget the hold was computed from as its limit (the caller's own limit when lower). A caller who
 * named no limit gets `max_tokens`, or `max_completion_tokens` on an endpoint that lists only that.
 */
export function upstreamBodyFor(
  request: Readonly<Record<string, unknown>>,
  endpoint: CatalogEndpoint,
  budget: number,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request)) {
    // `null` is "absent" in this API: a provider that refuses nulls (or reads one as a value) never sees it.
    if (value === undefined || value === null || NEVER_FORWARDED.has(name) || REASONING_FIELDS.includes(name)) continue;
    if (ALWAYS_FORWARDED.has(name) || lists(endpoint, name)) body[name] = value;
  }
  // No tools is no tool use: OpenAI's API refuses an empty `tools` (and `tool_choice` without tools).
  if (Array.isArray(body.tools) && body.tools.length === 0) {
    delete body.tools;
    delete body.tool_choice;
    delete body.parallel_tool_calls;
  }
  Object.assign(body, reasoningFor(request, endpoint));
  // The caller's `reasoning.exclude` / `include_reasoning: false` shapes the answer whatever was sent.
  if (reasoningExcluded(request)) (body as Record<symbol, unknown>)[EXCLUDE_REASONING] = true;
  return withCompletionLimit(body, endpoint, budget);
}

/**
 * The reasoning fields an endpoint that takes reasoning gets. Anthropic's and Gemini's translations
 * read all three forms. An OpenAI-compatible endpoint gets the forms it lists, and the caller's
 * choice carried over into a form it lists when the caller used another: `reasoning.effort` as
 * `reasoning_effort` (OpenAI's own API), `reasoning_effort` / `include_reasoning` as `reasoning`
 * (OpenRouter-style servers).
 */
function reasoningFor(request: Readonly<Record<string, unknown>>, endpoint: CatalogEndpoint): Record<string, unknown> {
  if (!endpointTakes(endpoint, 'reasoning')) return {};
  const given = (name: string) => (request[name] === null ? undefined : request[name]);
  const out: Record<string, unknown> = {};
  const translating = endpoint.provider.kind !== 'openai';
  for (const name of REASONING_FIELDS) {
    const value = given(name);
    if (value !== undefined && (translating || lists(endpoint, name))) out[name] = value;
  }
  if (translating) return out;
  const reasoning = isRecord(given('reasoning')) ? (given('reasoning') as Record<string, unknown>) : null;
  const effort = typeof reasoning?.effort === 'string' ? reasoning.effort : null;
  if (out.reasoning_effort === undefined && effort !== null && lists(endpoint, 'reasoning_effort'))
    out.reasoning_effort = effort;
  if (out.reasoning === undefined && reasoning === null && lists(endpoint, 'reasoning')) {
    const legacyEffort = given('reasoning_effort');
    const include = given('include_reasoning');
    const carried: Record<string, unknown> = {};
    if (typeof legacyEffort === 'string') carried.effort = legacyEffort;
    if (include === false) carried.exclude = true;
    else if (include === true) carried.enabled = true;
    if (Object.keys(carried).length > 0) out.reasoning = carried;
  }
  return out;
}

/**
 * The completion limit as the endpoint takes it: the lowest of the caller's limits and `budget`, under
 * the one field the endpoint lists (OpenAI's reasoning models refuse `max_tokens`; a server that knows
 * only `max_tokens` ignores `max_completion_tokens` and answers past the limit). An endpoint that
 * lists both or neither gets the caller's spelling, else `max_tokens`.
 */
export function withCompletionLimit(
  body: Record<string, unknown>,
  endpoint: CatalogEndpoint,
  budget: number,
): Record<string, unknown> {
  let limit = budget;
  const given: (typeof LIMIT_FIELDS)[number][] = [];
  for (const field of LIMIT_FIELDS) {
    const value = body[field];
    if (typeof value === 'number') {
      limit = Math.min(limit, value);
      given.push(field);
    }
    delete body[field];
  }
  const takesCurrent = lists(endpoint, 'max_completion_tokens');
  const takesLegacy = lists(endpoint, 'max_tokens');
  const fields =
    takesCurrent !== takesLegacy
      ? [takesCurrent ? 'max_completion_tokens' : 'max_tokens']
      : given.length > 0
        ? given
        : ['max_tokens'];
  for (const field of fields) body[field] = limit;
  return body;
}
