/**
 * The OpenAPI 3.1 document of this gateway (`GET /api/v1/openapi.json`), generated from the route
 * table: every registered route with its credentials (`auth`), the zod schemas its handler parses
 * the query and body with (as their input JSON Schema), and its answers' schemas
 * (pipeline/response-schemas.ts, as their output JSON Schema). Schemas named with `.meta({ id })`
 * become `components.schemas`. Errors all share the error record. docs/api.md is the prose reference.
 */
import { z } from 'zod';
import { errorResponse } from '../pipeline/response-schemas.js';
import { TAGS, type ResponseDoc, type RouteDoc } from './route-doc.js';
import type { RouteAuth } from './route-auth.js';

type JsonSchema = Record<string, unknown>;

export interface DocumentedRoute {
  method: string;
  url: string;
  auth: RouteAuth;
  doc: RouteDoc;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, OperationObject>>;
  components: {
    schemas: Record<string, JsonSchema>;
    securitySchemes: Record<string, JsonSchema>;
    responses: Record<string, JsonSchema>;
  };
}

interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters?: JsonSchema[];
  requestBody?: JsonSchema;
  responses: Record<string, JsonSchema>;
}

const SECURITY_SCHEMES = {
  inferenceKey: { type: 'http', scheme: 'bearer', description: 'An inference key (`sk-tg-v1-…`).' },
  managementKey: { type: 'http', scheme: 'bearer', description: 'A management key of the account.' },
  session: {
    type: 'apiKey',
    in: 'cookie',
    name: 'tg_session',
    description:
      'The dashboard’s session cookie (`__Host-tg_session` over HTTPS). State-changing methods also need `X-CSRF-Token` (from `GET /api/v1/session`) and a same-origin `Origin`.',
  },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The operator’s `TOLLGATE_ADMIN_TOKEN`.' },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: '`TOLLGATE_METRICS_TOKEN` when it is set; otherwise no credential.',
  },
};

const SECURITY: Record<RouteAuth, Record<string, string[]>[]> = {
  inference: [{ inferenceKey: [] }],
  management: [{ managementKey: [] }],
  'any-key': [{ inferenceKey: [] }, { managementKey: [] }],
  account: [{ managementKey: [] }, { session: [] }],
  'account-any': [{ inferenceKey: [] }, { managementKey: [] }, { session: [] }],
  session: [{ session: [] }],
  admin: [{ adminToken: [] }],
  metrics: [{ metricsToken: [] }, {}],
  none: [],
};

const ERROR_STATUS: Record<number, string> = {
  400: 'The request is invalid (the message names the field)',
  401: 'Missing or invalid credentials',
  402: 'Not enough credits, or the key’s limit is reached',
  403: 'Forbidden (admin API disabled, CSRF check failed, guardrail, moderation, feature disabled)',
  404: 'Not found (another account’s resource answers the same); for a completion, no endpoint meets the request’s routing requirements (`metadata.reasons`)',
  408: 'Every upstream attempt timed out',
  409: 'Conflict with the current state',
  413: 'The body is larger than the route’s limit',
  415: 'A `Content-Encoding` other than identity',
  429: 'Rate limited (`Retry-After` and `X-RateLimit-*` say until when)',
  502: 'The model’s providers failed',
  503: 'Temporarily unavailable (store outage, moderation unavailable, shutting down)',
};

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete converted.$schema;
  return converted;
}

/** Moves named schemas (`$defs`) into `components.schemas` and points their references there. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const { $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
  const retarget = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(retarget);
    if (value === null || typeof value !== 'object') return value;
    const out: JsonSchema = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] =
        key === '$ref' && typeof inner === 'string' && inner.startsWith('#/$defs/')
          ? `#/components/schemas/${inner.slice('#/$defs/'.length)}`
          : retarget(inner);
    }
    return out;
  };
  for (const [name, definition] of Object.entries($defs ?? {})) {
    const target = retarget(definition) as JsonSchema;
    delete target.id;
    const existing = components[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(target))
      throw new Error(`OpenAPI: two different schemas are named ${name}`);
    components[name] = target;
  }
  return retarget(rest) as JsonSchema;
}

/** Named schemas at the top of a conversion are not in `$defs`: put them there first. */
function named(schema: z.ZodType, io: 'input' | 'output', components: Record<string, JsonSchema>): JsonSchema {
  const converted = toJsonSchema(schema, io);
  const id = converted.id;
  if (typeof id === 'string') {
    const { $defs, ...body } = converted as JsonSchema & { $defs?: Record<string, JsonSchema> };
    return hoist({ $defs: { ...($defs ?? {}), [id]: body }, $ref: `#/$defs/${id}` }, components);
  }
  return hoist(converted, components);
}

function parameters(route: DocumentedRoute, components: Record<string, JsonSchema>): JsonSchema[] {
  const list: JsonSchema[] = [];
  for (const match of route.url.matchAll(/:([A-Za-z_]+)/g))
    list.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
  for (const [name, description] of Object.entries(route.doc.headers ?? {}))
    list.push({ name, in: 'header', required: true, description, schema: { type: 'string' } });
  if (route.doc.query) {
    const query = named(route.doc.query, 'input', components);
    const properties = (query.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((query.required ?? []) as string[]);
    for (const [name, schema] of Object.entries(properties)) {
      const { description, ...rest } = schema;
      list.push({
        name,
        in: 'query',
        required: required.has(name),
        schema: rest,
        ...(typeof description === 'string' ? { description } : {}),
      });
    }
  }
  return list;
}

function response(doc: ResponseDoc, components: Record<string, JsonSchema>): JsonSchema {
  const content: Record<string, JsonSchema> = {};
  if (doc.json) content['application/json'] = { schema: named(doc.json, 'output', components) };
  if (doc.events)
    content['text/event-stream'] = {
      schema: {
        type: 'string',
        description: 'Server-sent events: each `data:` line holds one `x-event-schema` object; the last is `[DONE]`',
      },
      // OpenAPI 3.1 has no place for the schema of one event (3.2's itemSchema): an extension says it.
      'x-event-schema': named(doc.events, 'output', components),
    };
  for (const media of doc.media ?? [])
    content[media] = { schema: media === 'application/json' ? {} : { type: 'string' } };
  return {
    description: doc.description,
    ...(doc.headers
      ? {
          headers: Object.fromEntries(
            Object.entries(doc.headers).map(([name, description]) => [
              name,
              { description, schema: { type: 'string' } },
            ]),
          ),
        }
      : {}),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

/** The error statuses a route's declaration implies, plus those it names. */
function errorStatuses(route: DocumentedRoute): number[] {
  const statuses = new Set<number>(route.doc.errors ?? []);
  const auth = route.auth;
  if (auth !== 'none') statuses.add(401);
  if (auth === 'admin') statuses.add(403);
  if ((auth === 'account' || auth === 'account-any' || auth === 'session') && route.method !== 'GET') statuses.add(403);
  if (route.url.includes(':')) statuses.add(404);
  if (route.doc.query) statuses.add(400);
  if (route.doc.body) for (const status of [400, 413, 415]) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}

/** `get_keys_by_hash` for `GET /api/v1/keys/:hash`; the dashboard's pages are `get_page_keys` (unique: a test checks). */
function operationId(route: DocumentedRoute): string {
  const api = route.url.startsWith('/api/v1/');
  const words = route.url
    .replace(/^\/api\/v1/, '')
    .split(/[/.-]/)
    .filter(Boolean)
    .map((part) => (part.startsWith(':') ? `by_${part.slice(1)}` : part.replace(/[^A-Za-z0-9_]/g, '')));
  const page = !api && route.doc.tag === 'Dashboard' ? ['page'] : [];
  return [route.method.toLowerCase(), ...page, ...words].join('_');
}

export function buildOpenApiDocument(routes: readonly DocumentedRoute[], version: string): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {};
  const paths: OpenApiDocument['paths'] = {};
  const errorRef = { $ref: '#/components/responses/Error' };
  named(errorResponse, 'output', schemas);
  for (const route of routes) {
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, JsonSchema> = {};
    for (const [status, doc] of Object.entries(route.doc.responses)) responses[status] = response(doc, schemas);
    for (const status of errorStatuses(route))
      if (!(String(status) in responses))
        responses[String(status)] = { ...errorRef, description: ERROR_STATUS[status] ?? 'Error' };
    responses.default = {
      ...errorRef,
      description: 'Any other error (e.g. 429 from the overload guard, 503 while shutting down)',
    };
    const params = parameters(route, schemas);
    const operation: OperationObject = {
      operationId: operationId(route),
      summary: route.doc.summary,
      ...(route.doc.description ? { description: route.doc.description } : {}),
      tags: [route.doc.tag],
      security: SECURITY[route.auth],
      ...(params.length > 0 ? { parameters: params } : {}),
      ...(route.doc.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: named(route.doc.body, 'input', schemas) } },
            },
          }
        : {}),
      responses,
    };
    (paths[path] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate',
      version,
      description:
        'A self-hostable, OpenRouter-compatible gateway for LLM inference. The prose reference is docs/api.md in the repository.',
    },
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas,
      securitySchemes: SECURITY_SCHEMES,
      responses: {
        Error: {
          description: 'The error record',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    },
  };
}
