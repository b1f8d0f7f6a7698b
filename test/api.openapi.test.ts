/**
 * GET /api/v1/openapi.json: a valid OpenAPI 3.1 document (checked by a maintained validator) that
 * lists every registered route with its schemas. That answers match it is checked in every suite
 * that starts a test gateway (test/helpers/gateway.ts); the checker itself is tested here.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { json } from '../src/http/route-doc.js';
import { buildOpenApiDocument, type OpenApiDocument } from '../src/http/openapi.js';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { ResponseChecker } from './helpers/openapi-check.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('the OpenAPI document', () => {
  let gw: TestGateway;
  let document: OpenApiDocument;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    const result = await call(gw, 'GET', '/openapi.json');
    expect(result.status).toBe(200);
    expect(String(result.headers['content-type'])).toMatch(/^application\/json/);
    document = result.json;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document) as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('lists every registered route, each with its credentials and a documented answer', () => {
    const routes = gw.gateway.routes.declarations();
    expect(routes.length).toBeGreaterThan(50);
    for (const route of routes) {
      const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
      const operation = (document.paths[path] as Record<string, any> | undefined)?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url}`).toBeDefined();
      expect(Array.isArray(operation.security), `${route.method} ${route.url}`).toBe(true);
      const success = Object.entries(operation.responses as Record<string, any>).filter(([status]) =>
        /^2\d\d$/.test(status),
      );
      expect(success.length, `${route.method} ${route.url} documents no success`).toBeGreaterThan(0);
      for (const [status, answer] of success)
        expect(Object.keys(answer.content ?? {}).length, `${route.method} ${route.url} ${status}`).toBeGreaterThan(0);
      expect(operation.responses.default.$ref).toBe('#/components/responses/Error');
    }
    // And nothing else: the document is the route table; each operation has its own id.
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    expect(operations.length).toBe(routes.length);
    expect(new Set(operations.map((operation) => operation.operationId)).size).toBe(operations.length);
  });

  it('takes its request schemas from the ones the handlers parse with', () => {
    const chat = (document.paths['/api/v1/chat/completions'] as any).post;
    const body = chat.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['messages']);
    // `models` without `model` is a request OpenRouter takes and @openrouter/sdk sends.
    expect(body.properties.model).toMatchObject({ type: 'string', description: expect.stringContaining('`models`') });
    expect(body.properties.temperature.anyOf[0]).toMatchObject({ type: 'number', minimum: 0, maximum: 2 });
    expect(chat.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ChatCompletion',
    });
    expect(chat.responses['200'].content['text/event-stream']['x-event-schema']).toEqual({
      $ref: '#/components/schemas/ChatCompletionChunk',
    });
    const keys = (document.paths['/api/v1/keys'] as any).get;
    expect(keys.security).toEqual([{ managementKey: [] }, { session: [] }]);
    expect(keys.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(['query:offset', 'query:include_disabled']);
    expect(document.components.schemas.ApiKey).toMatchObject({ type: 'object', additionalProperties: false });
  });
});

describe('the response checker', () => {
  const routes = [
    {
      method: 'GET',
      url: '/api/v1/things/:id',
      auth: 'none' as const,
      doc: {
        summary: 'A thing',
        tag: 'Catalog' as const,
        responses: { 200: json(z.object({ id: z.string(), count: z.int() }).meta({ id: 'Thing' })) },
      },
    },
  ];
  const checker = new ResponseChecker(buildOpenApiDocument(routes, 'test'));
  const check = (status: number, body: unknown) =>
    checker.check('GET', '/api/v1/things/:id', status, 'application/json; charset=utf-8', JSON.stringify(body));

  it('passes a matching answer and the error record on an error status', () => {
    expect(check(200, { id: 'a', count: 1 })).toBeNull();
    expect(check(404, { error: { code: 404, message: 'Not found' } })).toBeNull();
  });

  it('refuses a field the document lacks, a wrong type, an undocumented status, another media type', () => {
    expect(check(200, { id: 'a', count: 1, extra: true })).toMatch(/additional properties/);
    expect(check(200, { id: 'a', count: 'one' })).toMatch(/count must be integer/);
    expect(check(201, { id: 'a', count: 1 })).toMatch(/status is not documented/);
    expect(check(404, { error: 'Not found' })).toMatch(/must be object/);
    expect(checker.check('GET', '/api/v1/things/:id', 200, 'text/html', '<p>')).toMatch(/answered text\/html/);
    expect(checker.check('GET', '/api/v1/other', 200, 'application/json', '{}')).toMatch(/not in the OpenAPI document/);
  });
});
