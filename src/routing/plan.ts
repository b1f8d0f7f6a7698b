/**
 * Attempt planning: which endpoints to try, in which order. Pure: catalog + request + key + health
 * in, plan out. The plan is the requested model's endpoints, then each fallback model's (`models`),
 * each model's endpoints filtered by the caller's `provider` preferences and the key's guardrails,
 * and ordered: `provider.order` first when given, else by `sort`, else healthy first, then cheaper.
 * Providers are named in preferences as OpenRouter callers do: by id or display name, in any case.
 */
import { TollgateError } from '../core/errors.js';
import { parsePricePerToken, perMillionToPricePerToken } from '../core/money.js';
import type { KeyRecord } from '../store/types.js';
import {
  endpointTakes,
  type Catalog,
  type CatalogEndpoint,
  type CatalogModel,
  type CatalogProvider,
} from './catalog.js';
import type { ByokCredential } from './byok-credentials.js';
import type { EndpointStatsSnapshot } from './endpoint-stats.js';
import { HealthRegistry } from './health.js';

export type SortBy = 'price' | 'throughput' | 'latency';

export interface ProviderPreferences {
  order?: string[] | undefined;
  only?: string[] | undefined;
  ignore?: string[] | undefined;
  allow_fallbacks?: boolean | undefined;
  sort?: SortBy | { by: SortBy } | undefined;
  /** `prompt` and `completion` in USD per million tokens, `request` in USD per request. */
  max_price?:
    | {
        prompt?: number | string | undefined;
        completion?: number | string | undefined;
        request?: number | string | undefined;
      }
    | undefined;
  require_parameters?: boolean | undefined;
  /** `deny`: only endpoints that neither store nor train on prompts. */
  data_collection?: 'allow' | 'deny' | undefined;
  /** Only zero-data-retention endpoints. */
  zdr?: boolean | undefined;
  /** Only endpoints serving one of these quantizations (an endpoint without a declared one is `unknown`). */
  quantizations?: string[] | undefined;
}

export interface PlannedAttempt {
  model: CatalogModel;
  endpoint: CatalogEndpoint;
  /** HealthRegistry key of this endpoint (BYOK attempts have their own: a bad own key says nothing of shared capacity). */
  healthKey: string;
  /** The account's own provider key, when this attempt uses it (BYOK). */
  byok: ByokCredential | null;
}

export interface PlanInput {
  model: string;
  models?: string[] | undefined;
  provider?: ProviderPreferences | undefined;
  /** Request parameters that an endpoint must support when `provider.require_parameters` is set. */
  requestedParameters?: readonly string[];
  /** The request carries function tools: only endpoints that list `tools` can serve it (as OpenRouter routes tool use). */
  usesTools?: boolean;
  /** The caller's own provider keys: tried before any shared capacity of the model (after all of it when `is_fallback`). */
  byok?: readonly ByokCredential[];
}

export interface HealthView {
  rank(key: string, now: number): number;
  snapshot(key: string, now: number): EndpointStatsSnapshot | null;
}

const NO_HEALTH: HealthView = { rank: () => 0, snapshot: () => null };

function price(endpoint: CatalogEndpoint): bigint {
  return endpoint.prices.prompt + endpoint.prices.completion;
}

/**
 * OpenRouter's routing variants: `<model>:nitro` is the model with its endpoints by throughput
 * (`provider.sort: "throughput"`), `<model>:floor` by price — unless the catalog lists that id itself.
 */
const VARIANT_SORTS: readonly (readonly [string, SortBy])[] = [
  [':nitro', 'throughput'],
  [':floor', 'price'],
];

interface RequestedModel {
  model: CatalogModel;
  /** The order a routing variant asks for (null: none). */
  sort: SortBy | null;
}

function lookup(catalog: Catalog, id: string): RequestedModel {
  const model = catalog.models.get(id);
  if (model) return { model, sort: null };
  for (const [suffix, sort] of VARIANT_SORTS) {
    const base = id.endsWith(suffix) ? catalog.models.get(id.slice(0, -suffix.length)) : undefined;
    if (base) return { model: base, sort };
  }
  throw new TollgateError('catalog.unknown_model', `${id} is not a valid model ID`);
}

function sortKey(sort: ProviderPreferences['sort']): SortBy | null {
  if (!sort) return null;
  return typeof sort === 'string' ? sort : sort.by;
}

/** Why endpoints were left out, for a 503 that names the reason. */
class Exclusions {
  readonly reasons = new Set<string>();
  add(reason: string): void {
    this.reasons.add(reason);
  }
}

/**
 * A caller's list of providers (`order`, `only`, `ignore`), matched case-insensitively against each
 * provider's id and display name (`CatalogProvider.names`, lower-cased once per catalog).
 */
class ProviderList {
  /** Lower-cased entry → its first position in the caller's list. */
  private readonly positions = new Map<string, number>();

  constructor(readonly entries: readonly string[]) {
    entries.forEach((entry, i) => {
      const name = entry.toLowerCase();
      if (!this.positions.has(name)) this.positions.set(name, i);
    });
  }

  get size(): number {
    return this.entries.length;
  }

  /** Position of the first entry naming this provider, or -1. */
  indexOf(provider: CatalogProvider): number {
    let found = -1;
    for (const name of provider.names) {
      const i = this.positions.get(name);
      if (i !== undefined && (found === -1 || i < found)) found = i;
    }
    return found;
  }

  /** The provider as the caller wrote it, when that differs from its id: `mock ("Mock")`. */
  describe(provider: CatalogProvider): string {
    const entry = this.entries[this.indexOf(provider)];
    return entry === undefined || entry === provider.id ? provider.id : `${provider.id} (${JSON.stringify(entry)})`;
  }
}

/** The caller's preferences, resolved once per request (every model of the plan shares them). */
interface Filters {
  prefs: ProviderPreferences;
  order: ProviderList;
  only: ProviderList | null;
  ignore: ProviderList;
  maxPrompt: bigint | null;
  maxCompletion: bigint | null;
  maxRequest: bigint | null;
  required: readonly string[];
  usesTools: boolean;
  /** The privacy preference that keeps the caller's own keys out (`withByok`), as the 503 names it; null: none. */
  privacy: string | null;
}

function resolveFilters(input: PlanInput): Filters {
  const prefs = input.provider ?? {};
  const max = prefs.max_price;
  return {
    prefs,
    order: new ProviderList(prefs.order ?? []),
    only: prefs.only ? new ProviderList(prefs.only) : null,
    ignore: new ProviderList(prefs.ignore ?? []),
    maxPrompt: max?.prompt !== undefined ? perMillionToPricePerToken(max.prompt) : null,
    maxCompletion: max?.completion !== undefined ? perMillionToPricePerToken(max.completion) : null,
    maxRequest: max?.request !== undefined ? parsePricePerToken(String(max.request)) : null,
    required: prefs.require_parameters ? (input.requestedParameters ?? []) : [],
    usesTools: input.usesTools === true,
    privacy:
      prefs.zdr === true ? 'provider.zdr' : prefs.data_collection === 'deny' ? 'provider.data_collection=deny' : null,
  };
}

function eligible(
  model: CatalogModel,
  filters: Filters,
  allowedProviders: ReadonlySet<string> | null,
  why: Exclusions,
): CatalogEndpoint[] {
  const { prefs, order, only, ignore, maxPrompt, maxCompletion, maxRequest, required } = filters;
  return model.endpoints.filter((e) => {
    const id = e.provider.id;
    if (only && only.indexOf(e.provider) === -1) return (why.add(`provider.only excludes ${id}`), false);
    if (ignore.indexOf(e.provider) !== -1)
      return (why.add(`provider.ignore excludes ${ignore.describe(e.provider)}`), false);
    if (prefs.allow_fallbacks === false && order.size > 0 && order.indexOf(e.provider) === -1)
      return (why.add(`allow_fallbacks=false and ${id} is not in provider.order`), false);
    if (allowedProviders && !allowedProviders.has(id)) return (why.add(`this key may not use provider ${id}`), false);
    // Undeclared policies count as the worst case (catalog.ts): a privacy preference is never assumed met.
    if (prefs.data_collection === 'deny' && e.dataPolicy.dataCollection !== 'deny')
      return (why.add(`provider.data_collection=deny excludes ${id} (it may store or train on prompts)`), false);
    if (prefs.zdr === true && !e.dataPolicy.zdr)
      return (why.add(`provider.zdr excludes ${id} (not a zero-data-retention endpoint)`), false);
    if (prefs.quantizations && !prefs.quantizations.includes((e.quantization ?? 'unknown').toLowerCase()))
      return (why.add(`provider.quantizations excludes ${id} (${e.quantization ?? 'unknown'})`), false);
    if (maxPrompt !== null && e.prices.prompt > maxPrompt)
      return (why.add(`${id} costs more than max_price.prompt`), false);
    if (maxCompletion !== null && e.prices.completion > maxCompletion)
      return (why.add(`${id} costs more than max_price.completion`), false);
    if (maxRequest !== null && e.prices.request > maxRequest)
      return (why.add(`${id} costs more than max_price.request`), false);
    if (filters.usesTools && !e.supportedParameters.includes('tools'))
      return (why.add(`${id} does not support tool use`), false);
    const missing = required.filter((p) => !endpointTakes(e, p));
    if (missing.length > 0)
      return (why.add(`${id} does not support ${missing.join(', ')} (require_parameters)`), false);
    return true;
  });
}

function compare(a: bigint | number, b: bigint | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function order(
  model: CatalogModel,
  endpoints: CatalogEndpoint[],
  filters: Filters,
  health: HealthView,
  now: number,
): CatalogEndpoint[] {
  const key = (e: CatalogEndpoint) => HealthRegistry.keyOf(model.id, e.provider.id);
  const sort = sortKey(filters.prefs.sort);
  const measured = (e: CatalogEndpoint, by: 'latency' | 'throughput') => {
    const snap = health.snapshot(key(e), now);
    const p = by === 'latency' ? snap?.latency30m : snap?.throughput30m;
    return p?.p50 ?? null;
  };
  const byPreference = (a: CatalogEndpoint, b: CatalogEndpoint): number => {
    if (sort === 'latency') {
      // Unmeasured endpoints go after measured ones.
      const la = measured(a, 'latency') ?? Number.POSITIVE_INFINITY;
      const lb = measured(b, 'latency') ?? Number.POSITIVE_INFINITY;
      return compare(la, lb) || compare(price(a), price(b));
    }
    if (sort === 'throughput') {
      const ta = measured(a, 'throughput') ?? -1;
      const tb = measured(b, 'throughput') ?? -1;
      return compare(tb, ta) || compare(price(a), price(b));
    }
    if (sort === 'price') return compare(price(a), price(b));
    return compare(health.rank(key(a), now), health.rank(key(b), now)) || compare(price(a), price(b));
  };
  const sorted = [...endpoints].sort(byPreference);
  const explicit = filters.order;
  if (explicit.size === 0) return sorted;
  const rank = (e: CatalogEndpoint) => {
    const i = explicit.indexOf(e.provider);
    return i === -1 ? explicit.size : i;
  };
  return sorted
    .map((e, i) => ({ e, i }))
    .sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i)
    .map(({ e }) => e);
}

/**
 * One endpoint's attempts in three groups: the caller's own keys for its provider that go first, its
 * shared capacity, and the own keys marked `is_fallback`. The plan puts every endpoint's first group
 * before any endpoint's shared capacity (OpenRouter: own keys are tried first, wherever their provider
 * stands in the order), and the fallback keys after all of it. Under a privacy preference
 * (`data_collection: deny`, `zdr`) the own keys are not used: the operator's declaration covers its
 * own account with the provider, and the caller's account runs under terms nobody declared — so an own
 * key that is required leaves nothing of the endpoint.
 */
interface EndpointAttempts {
  own: PlannedAttempt[];
  shared: PlannedAttempt[];
  fallback: PlannedAttempt[];
}

function withByok(
  model: CatalogModel,
  endpoint: CatalogEndpoint,
  byok: readonly ByokCredential[],
  filters: Filters,
  why: Exclusions,
): EndpointAttempts {
  const shared: PlannedAttempt = {
    model,
    endpoint,
    healthKey: HealthRegistry.keyOf(model.id, endpoint.provider.id),
    byok: null,
  };
  // Stored entries of a provider that is not (or no longer) BYOK-enabled are never used.
  const own = byok
    .filter(
      (c) =>
        endpoint.provider.byok === true &&
        c.provider === endpoint.provider.id &&
        (!c.allowedModels || c.allowedModels.has(model.id)),
    )
    .sort((a, b) => a.sortOrder - b.sortOrder);
  if (own.length === 0) return { own: [], shared: [shared], fallback: [] };
  if (filters.privacy !== null) {
    if (!own.some((c) => c.isRequired)) return { own: [], shared: [shared], fallback: [] };
    why.add(
      `${filters.privacy} excludes your own key for ${endpoint.provider.id} (its data policy is not declared), which is required`,
    );
    return { own: [], shared: [], fallback: [] };
  }
  const attempt = (c: ByokCredential): PlannedAttempt => ({
    model,
    endpoint,
    healthKey: `${shared.healthKey}|byok:${c.id}`,
    byok: c,
  });
  return {
    own: own.filter((c) => !c.isFallback).map(attempt),
    shared: own.some((c) => c.isRequired) ? [] : [shared],
    fallback: own.filter((c) => c.isFallback).map(attempt),
  };
}

export function planAttempts(
  catalog: Catalog,
  input: PlanInput,
  key: Pick<KeyRecord, 'allowedModels' | 'allowedProviders'>,
  health: HealthView = NO_HEALTH,
  now = 0,
): PlannedAttempt[] {
  const ids = [input.model, ...(input.models ?? []).filter((id) => id !== input.model)];
  // A model named twice (`x` and `x:nitro`) is planned once, as first named.
  const seen = new Set<string>();
  const models = ids.map((id) => lookup(catalog, id)).filter((r) => !seen.has(r.model.id) && seen.add(r.model.id));
  const allowedModels = key.allowedModels ? new Set(key.allowedModels) : null;
  const permitted = allowedModels ? models.filter((r) => allowedModels.has(r.model.id)) : models;
  if (permitted.length === 0) {
    throw new TollgateError('guardrail.forbidden', `This key is not allowed to use ${input.model}`, {
      metadata: { model: input.model },
    });
  }

  const why = new Exclusions();
  const filters = resolveFilters(input);
  const allowedProviders = key.allowedProviders ? new Set(key.allowedProviders) : null;
  const plan: PlannedAttempt[] = [];
  for (const { model, sort } of permitted) {
    // A variant's order applies to its model, unless the caller chose one (`provider.sort`).
    const ordering = sort === null || filters.prefs.sort ? filters : { ...filters, prefs: { ...filters.prefs, sort } };
    const attempts = order(model, eligible(model, filters, allowedProviders, why), ordering, health, now).map(
      (endpoint) => withByok(model, endpoint, input.byok ?? [], filters, why),
    );
    // Per model (the caller's order of models comes first): own keys, shared capacity, fallback own keys.
    for (const group of ['own', 'shared', 'fallback'] as const) for (const a of attempts) plan.push(...a[group]);
  }
  if (plan.length === 0) {
    const reasons = [...why.reasons];
    if (reasons.length > 0 && reasons.every((r) => r.startsWith('this key may not use provider'))) {
      const blocked = reasons.map((r) => r.slice('this key may not use provider '.length));
      throw new TollgateError(
        'guardrail.forbidden',
        `This key is not allowed to use any provider of ${input.model}: ${blocked.join(', ')} ${blocked.length === 1 ? 'is' : 'are'} not among its allowed providers`,
        {
          metadata: { model: input.model, providers: blocked },
        },
      );
    }
    throw new TollgateError(
      'routing.no_endpoint',
      `No endpoints found for ${input.model} that meet the routing requirements: ${reasons.join('; ')}`,
      {
        metadata: { model: input.model, reasons },
      },
    );
  }
  return plan;
}
