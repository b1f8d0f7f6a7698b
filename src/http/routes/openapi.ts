/**
 * GET /api/v1/openapi.json — the OpenAPI 3.1 document of this gateway's routes (http/openapi.ts),
 * built once, on the first request, when every route is registered.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { buildOpenApiDocument, type OpenApiDocument } from '../openapi.js';
import type { RouteTable } from '../route-table.js';

/** The package's version (package.json sits two levels above both src/http/routes and dist/http/routes). */
function packageVersion(): string {
  const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

const documentSchema = z
  .looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({}), paths: z.looseObject({}) })
  .meta({ description: 'An OpenAPI 3.1 document' });

export function registerOpenApiRoute(routes: RouteTable): void {
  let document: OpenApiDocument | null = null;
  routes.add(
    'GET',
    '/api/v1/openapi.json',
    async () => (document ??= buildOpenApiDocument(routes.declarations(), packageVersion())),
    {
      auth: 'none',
      doc: {
        summary: 'This document',
        tag: 'Operations',
        responses: { 200: { description: 'The OpenAPI 3.1 document of every route', json: documentSchema } },
      },
    },
  );
}
