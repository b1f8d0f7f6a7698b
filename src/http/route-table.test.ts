import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { RouteTable, type ParamsOf } from './route-table.js';

describe('RouteTable', () => {
  it('types path parameters from the URL template (checked by npm run typecheck) and passes them through', async () => {
    const params: ParamsOf<'/api/v1/models/:author/:slug/endpoints'> = { author: 'openai', slug: 'gpt-4o' };
    // @ts-expect-error -- not a parameter of this URL
    const wrong: ParamsOf<'/api/v1/keys/:hash'> = { id: 'x' };
    expect([params, wrong]).toHaveLength(2);

    const app = Fastify();
    const routes = new RouteTable(app, async () => undefined, 1024);
    routes.add('GET', '/things/:kind/:id', async (request) => ({ kind: request.params.kind, id: request.params.id }), {
      auth: 'none',
      doc: { summary: 'A thing', tag: 'Catalog', responses: { 200: { description: 'OK' } } },
    });
    const response = await app.inject({ method: 'GET', url: '/things/a%3Ab/42' });
    expect(response.json()).toEqual({ kind: 'a:b', id: '42' });
    expect(routes.allowedMethods('/things/x/y')).toEqual(['GET']);
    await app.close();
  });
});
