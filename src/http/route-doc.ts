/**
 * What a route says about itself for the OpenAPI document (openapi.ts): its request schemas — the
 * same zod schemas the handlers parse with — and its answers. Every route must say it (RouteTable.add
 * takes it), so a route cannot be added without appearing, with schemas, in the reference.
 */
import type { z } from 'zod';

export const TAGS = {
  Inference: 'Chat completions (OpenAI Chat Completions plus OpenRouter’s extensions).',
  Catalog: 'Models, their endpoints and the providers (public).',
  Keys: 'The caller’s key and its account; key management with a management key or the session.',
  Usage: 'The account’s usage, generations and credit history.',
  Account: 'The account holder’s account, OAuth apps and notification settings.',
  Session: 'The dashboard’s sign-in, sign-up and password management.',
  OAuth: 'OAuth PKCE: an app obtains a key the holder approved.',
  BYOK: 'The account’s own provider keys (bring your own key).',
  Rankings: 'Public rankings of apps and models by tokens.',
  Admin: 'The operator’s API (`TOLLGATE_ADMIN_TOKEN`).',
  'Secret scanning': 'Reports of exposed keys from a code host’s secret scanning.',
  Operations: 'Health, readiness, metrics and this document.',
  Dashboard: 'The account holder’s dashboard (HTML pages and their assets).',
} as const;

export type Tag = keyof typeof TAGS;

/** One answer of a route. `json` is a response schema (pipeline/response-schemas.ts). */
export interface ResponseDoc {
  description: string;
  json?: z.ZodType;
  /** A streamed answer on the same status: each `data:` event is one of these (`text/event-stream`). */
  events?: z.ZodType;
  /** A body that is not described by a schema: its media types (the HTML pages, assets, Prometheus text). */
  media?: readonly string[];
  /** Response headers worth naming, with what they carry. */
  headers?: Record<string, string>;
}

export interface RouteDoc {
  summary: string;
  tag: Tag;
  description?: string;
  /** The query string's schema: each property is one query parameter. */
  query?: z.ZodType;
  /** The JSON body's schema. */
  body?: z.ZodType;
  /** Request headers the route requires, with what they carry. */
  headers?: Record<string, string>;
  /** Success answers by status. */
  responses: Record<number, ResponseDoc>;
  /**
   * Error statuses the route answers beyond those its declaration implies (401/403 from `auth`, 400
   * for a body or query, 404 for path parameters, 413/415 for a body); every error is the error record.
   */
  errors?: readonly number[];
}

/** A JSON answer. */
export function json(schema: z.ZodType, description = 'OK'): ResponseDoc {
  return { description, json: schema };
}
