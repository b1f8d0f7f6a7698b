/**
 * Attempt planning: which endpoints to try, in which order. Pure: catalog + request + key in, plan out.
 * Order: the requested model's endpoints, then each fallback model's; within a model, the caller's
 * `provider.order` first, then the cheapest.
 */
import { TollgateError } from '../core/errors.js';
import type { KeyRecord } from '../store/types.js';
import type { Catalog, CatalogEndpoint, CatalogModel } from './catalog.js';

export interface ProviderPreferences {
  order?: string[] | undefined;
  only?: string[] | undefined;
  ignore?: string[] | undefined;
  allow_fallbacks?: boolean | undefined;
  sort?: string | { by: string } | undefined;
}

export interface PlannedAttempt {
  model: CatalogModel;
  endpoint: CatalogEndpoint;
}

export interface PlanInput {
  model: string;
  models?: string[] | undefined;
  provider?: ProviderPreferences | undefined;
}

function price(endpoint: CatalogEndpoint): bigint {
  return endpoint.prices.prompt + endpoint.prices.completion;
}

function lookup(catalog: Catalog, id: string): CatalogModel {
  const model = catalog.models.get(id);
  if (!model) throw new TollgateError('catalog.unknown_model', `${id} is not a valid model ID`);
  return model;
}

function orderEndpoints(model: CatalogModel, prefs: ProviderPreferences): CatalogEndpoint[] {
  const only = prefs.only ? new Set(prefs.only) : null;
  const ignore = new Set(prefs.ignore ?? []);
  let endpoints = model.endpoints.filter((e) => (!only || only.has(e.provider.id)) && !ignore.has(e.provider.id));
  endpoints = [...endpoints].sort((a, b) => (price(a) < price(b) ? -1 : price(a) > price(b) ? 1 : 0));
  const order = prefs.order ?? [];
  if (order.length > 0) {
    const rank = (e: CatalogEndpoint) => {
      const i = order.indexOf(e.provider.id);
      return i === -1 ? order.length : i;
    };
    endpoints = endpoints.map((e, i) => ({ e, i })).sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i).map(({ e }) => e);
    if (prefs.allow_fallbacks === false) endpoints = endpoints.filter((e) => order.includes(e.provider.id));
  }
  return endpoints;
}

export function planAttempts(catalog: Catalog, input: PlanInput, key: Pick<KeyRecord, 'allowedModels' | 'allowedProviders'>): PlannedAttempt[] {
  const ids = [input.model, ...(input.models ?? []).filter((id) => id !== input.model)];
  const models = ids.map((id) => lookup(catalog, id));
  const allowedModels = key.allowedModels ? new Set(key.allowedModels) : null;
  const allowedProviders = key.allowedProviders ? new Set(key.allowedProviders) : null;

  const permitted = allowedModels ? models.filter((m) => allowedModels.has(m.id)) : models;
  if (permitted.length === 0) {
    throw new TollgateError('guardrail.forbidden', `This key is not allowed to use ${input.model}`, { metadata: { model: input.model } });
  }

  const plan: PlannedAttempt[] = [];
  let filteredByKey = false;
  for (const model of permitted) {
    for (const endpoint of orderEndpoints(model, input.provider ?? {})) {
      if (allowedProviders && !allowedProviders.has(endpoint.provider.id)) {
        filteredByKey = true;
        continue;
      }
      plan.push({ model, endpoint });
    }
  }
  if (plan.length === 0) {
    if (filteredByKey) {
      throw new TollgateError('guardrail.forbidden', `This key is not allowed to use any provider of ${input.model}`, { metadata: { model: input.model } });
    }
    throw new TollgateError('routing.no_endpoint', `No endpoints found for ${input.model} that match the provider preferences (only/ignore/order)`, {
      metadata: { model: input.model, provider: input.provider ?? null },
    });
  }
  return plan;
}
