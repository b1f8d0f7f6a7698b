/**
 * GET /models (and /models/count, /models/user, /model/{author}/{slug}), GET /models/{author}/{slug}/endpoints,
 * GET /endpoints/zdr, GET /providers (docs/api.md). No auth needed, but for /models/user (a key).
 */
import { TollgateError } from '../../core/errors.js';
import { primaryEndpoint, type CatalogEndpoint, type CatalogModel } from '../../routing/catalog.js';
import type { EndpointStatsSnapshot } from '../../routing/endpoint-stats.js';
import { HealthRegistry } from '../../routing/health.js';
import { z } from 'zod';
import { parseBody } from '../parse-body.js';
import { MAX_OFFSET, pageOffset } from '../../core/page-offset.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import type { endpointSchema, modelSchema } from '../../pipeline/response-schemas.js';
import {
  endpointsResponse,
  modelCountResponse,
  modelEndpointsResponse,
  modelResponse,
  modelsResponse,
  providersResponse,
} from '../../pipeline/response-schemas.js';
import { requestKey } from '../route-auth.js';
import type { Services } from '../services.js';

function architecture(model: CatalogModel) {
  return {
    modality: `${model.inputModalities.join('+')}->${model.outputModalities.join('+')}`,
    input_modalities: [...model.inputModalities],
    output_modalities: [...model.outputModalities],
    tokenizer: model.tokenizer,
    instruct_type: model.instructType,
  };
}

function pricing(endpoint: CatalogEndpoint) {
  return {
    prompt: endpoint.pricing.prompt,
    completion: endpoint.pricing.completion,
    request: endpoint.pricing.request,
    image: '0',
    // As OpenRouter lists them: only for an endpoint whose cache is priced apart from its prompt.
    ...(endpoint.pricing.input_cache_read === undefined ? {} : { input_cache_read: endpoint.pricing.input_cache_read }),
    ...(endpoint.pricing.input_cache_write === undefined
      ? {}
      : { input_cache_write: endpoint.pricing.input_cache_write }),
  };
}

function renderModel(model: CatalogModel): z.output<typeof modelSchema> {
  const primary = primaryEndpoint(model);
  // In a Model, `tokenizer` is optional but not nullable (@openrouter/sdk rejects null); the endpoints
  // listing, by contrast, requires it present and nullable.
  const { tokenizer, ...rest } = architecture(model);
  return {
    id: model.id,
    canonical_slug: model.id,
    hugging_face_id: null,
    name: model.name,
    created: model.created,
    description: model.description,
    context_length: model.contextLength,
    architecture: tokenizer === null ? rest : { ...rest, tokenizer },
    pricing: pricing(primary),
    top_provider: {
      is_moderated: false,
      context_length: primary.contextLength,
      max_completion_tokens: primary.maxCompletionTokens,
    },
    per_request_limits: null,
    supported_parameters: [...model.supportedParameters],
    default_parameters: null,
    supported_voices: null,
    links: { details: `/api/v1/models/${model.id}/endpoints` },
  };
}

function renderEndpoint(
  model: CatalogModel,
  endpoint: CatalogEndpoint,
  stats: EndpointStatsSnapshot | null,
): z.output<typeof endpointSchema> {
  const tools = endpoint.supportedParameters.includes('tool_choice');
  return {
    name: `${endpoint.provider.name} | ${model.id}`,
    model_id: model.id,
    model_name: model.name,
    provider_name: endpoint.provider.name,
    tag: endpoint.provider.id,
    context_length: endpoint.contextLength,
    max_completion_tokens: endpoint.maxCompletionTokens,
    max_prompt_tokens: null,
    pricing: pricing(endpoint),
    quantization: endpoint.quantization,
    supported_parameters: [...endpoint.supportedParameters],
    supports_implicit_caching: false,
    supports_tool_choice: { auto: tools, none: tools, required: tools, function: tools },
    status: 0,
    // Tollgate's capacity limits (docs/api.md, "Capacity limits"): this endpoint's own, and its model's over all endpoints.
    rate_limits: {
      endpoint: endpoint.limits
        ? { requests_per_minute: endpoint.limits.rpm, tokens_per_minute: endpoint.limits.tpm }
        : null,
      model: model.limits ? { requests_per_minute: model.limits.rpm, tokens_per_minute: model.limits.tpm } : null,
    },
    // Uptime counts every process's outcomes (routing/fleet-health.ts); latency and throughput are this
    // process's samples. Null until the endpoint has served traffic, never invented.
    uptime_last_5m: stats?.uptime5m ?? null,
    uptime_last_30m: stats?.uptime30m ?? null,
    uptime_last_1d: stats?.uptime1d ?? null,
    latency_last_30m: stats?.latency30m ?? null,
    throughput_last_30m: stats?.throughput30m ?? null,
  };
}

/** A comma-separated list of names, as @openrouter/sdk sends its filters. */
const nameList = z
  .string()
  .max(1000)
  .transform((value) =>
    value
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== ''),
  );

/**
 * The model filters @openrouter/sdk sends: `supported_parameters` (every one listed), `output_modalities`
 * (any one listed; `all` for every model). Its other filters (category, sort, distillable, region…) name
 * OpenRouter's data a self-hosted catalog does not have, and are ignored, as unknown parameters are.
 */
const filters = z.object({
  supported_parameters: nameList.optional(),
  output_modalities: nameList.optional(),
});

function matches(model: CatalogModel, wanted: z.output<typeof filters>): boolean {
  if (wanted.supported_parameters?.some((name) => !model.supportedParameters.includes(name))) return false;
  const modalities = wanted.output_modalities;
  if (modalities !== undefined && modalities.length > 0 && !modalities.includes('all'))
    return modalities.some((modality) => model.outputModalities.includes(modality));
  return true;
}

/** The same listing's next page: the request's parameters (already checked) with `offset` moved on. */
function nextPage(path: string, query: unknown, offset: number): string {
  const search = new URLSearchParams(query as Record<string, string>);
  search.set('offset', String(offset));
  return `${path}?${search.toString()}`;
}

export function registerCatalogRoutes(routes: RouteTable, services: Services): void {
  /** The model a path names (the router already percent-decoded the segments: gpt-4o%3Afree → gpt-4o:free). */
  const namedModel = (params: { author: string; slug: string }): CatalogModel => {
    const id = `${params.author}/${params.slug}`;
    const model = services.catalog.models.get(id);
    if (!model) throw new TollgateError('resource.not_found', `Model ${id} not found`);
    return model;
  };

  // `offset`/`limit` are honoured because @openrouter/sdk pages with them (and asks for another page
  // whenever one comes back full); without them the whole catalog is one page.
  const page = z.object({
    offset: pageOffset,
    limit: z
      .string()
      .regex(/^\d{1,7}$/, `limit must be a whole number from 1 to ${MAX_OFFSET}`)
      .transform(Number)
      .refine((n) => n >= 1 && n <= MAX_OFFSET, `limit must be a whole number from 1 to ${MAX_OFFSET}`)
      .optional(),
  });
  const listing = page.extend(filters.shape);
  const list = (path: string, models: CatalogModel[], query: unknown) => {
    const { offset, limit, ...wanted } = parseBody(listing, query);
    const all = models.filter((model) => matches(model, wanted));
    const end = limit === undefined ? all.length : offset + limit;
    const data = all.slice(offset, end).map(renderModel);
    return { data, links: { next: end < all.length ? nextPage(path, query, end) : null }, total_count: all.length };
  };
  routes.add(
    'GET',
    '/api/v1/models',
    async (request) => list('/api/v1/models', [...services.catalog.models.values()], request.query),
    {
      auth: 'none',
      doc: { summary: 'The models', tag: 'Catalog', query: listing, responses: { 200: json(modelsResponse) } },
    },
  );

  // What @openrouter/sdk's `models.listForUser()` calls: the models this key may use.
  routes.add(
    'GET',
    '/api/v1/models/user',
    async (request) => {
      const allowed = requestKey(request).allowedModels;
      const models = [...services.catalog.models.values()].filter(
        (model) => allowed === null || allowed.includes(model.id),
      );
      return list('/api/v1/models/user', models, request.query);
    },
    {
      auth: 'any-key',
      doc: {
        summary: 'The models this key may use',
        tag: 'Catalog',
        query: listing,
        responses: { 200: json(modelsResponse) },
      },
    },
  );

  // @openrouter/sdk's `models.count()`.
  routes.add(
    'GET',
    '/api/v1/models/count',
    async (request) => {
      const wanted = parseBody(filters, request.query);
      let count = 0;
      for (const model of services.catalog.models.values()) if (matches(model, wanted)) count++;
      return { data: { count } };
    },
    {
      auth: 'none',
      doc: { summary: 'How many models', tag: 'Catalog', query: filters, responses: { 200: json(modelCountResponse) } },
    },
  );

  // @openrouter/sdk's `models.get({ author, slug })`.
  routes.add(
    'GET',
    '/api/v1/model/:author/:slug',
    async (request) => ({ data: renderModel(namedModel(request.params)) }),
    {
      auth: 'none',
      doc: { summary: 'One model', tag: 'Catalog', responses: { 200: json(modelResponse) }, errors: [404] },
    },
  );

  routes.add(
    'GET',
    '/api/v1/models/:author/:slug/endpoints',
    async (request) => {
      const model = namedModel(request.params);
      return {
        data: {
          id: model.id,
          name: model.name,
          created: model.created,
          description: model.description,
          architecture: architecture(model),
          endpoints: model.endpoints.map((e) =>
            renderEndpoint(
              model,
              e,
              services.health.snapshot(HealthRegistry.keyOf(model.id, e.provider.id), services.now()),
            ),
          ),
        },
      };
    },
    {
      auth: 'none',
      doc: {
        summary: 'A model’s endpoints (providers) with their prices, limits and measured health',
        tag: 'Catalog',
        responses: { 200: json(modelEndpointsResponse) },
      },
    },
  );

  // @openrouter/sdk's `endpoints.listZdrEndpoints()`: the endpoints whose provider retains no data.
  routes.add(
    'GET',
    '/api/v1/endpoints/zdr',
    async () => {
      const data: z.output<typeof endpointSchema>[] = [];
      for (const model of services.catalog.models.values())
        for (const e of model.endpoints)
          if (e.dataPolicy.zdr)
            data.push(
              renderEndpoint(
                model,
                e,
                services.health.snapshot(HealthRegistry.keyOf(model.id, e.provider.id), services.now()),
              ),
            );
      return { data };
    },
    {
      auth: 'none',
      doc: {
        summary: 'The endpoints with zero data retention',
        tag: 'Catalog',
        responses: { 200: json(endpointsResponse) },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/providers',
    async () => ({
      data: [...services.catalog.providers.values()].map((p) => ({
        name: p.name,
        slug: p.id,
        privacy_policy_url: p.privacyPolicyUrl,
        terms_of_service_url: null,
        status_page_url: null,
      })),
    }),
    { auth: 'none', doc: { summary: 'The providers', tag: 'Catalog', responses: { 200: json(providersResponse) } } },
  );
}
