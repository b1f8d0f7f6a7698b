/** BYOK provider keys with a management key (docs/api.md). */
import {
  createByok,
  createByokSchema,
  deleteByok,
  listByok,
  ownedByok,
  renderByok,
  rewrapByok,
  updateByok,
  updateByokSchema,
  type ByokDeps,
} from '../../pipeline/byok.js';
import { parseBody } from '../parse-body.js';
import { requestKey } from '../route-auth.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { byokSchema, deletedResponse } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

export function registerByokRoutes(routes: RouteTable, services: Services, deps: ByokDeps): void {
  const byokData = z.object({ data: byokSchema });

  routes.add(
    'GET',
    '/api/v1/byok',
    async (request) => {
      const me = requestKey(request);
      const records = await listByok(deps, me.accountId);
      return { data: records, total_count: records.length };
    },
    {
      auth: 'management',
      doc: {
        summary: 'The account’s provider keys (never the keys themselves)',
        tag: 'BYOK',
        responses: { 200: json(z.object({ data: z.array(byokSchema), total_count: z.int() })) },
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/byok',
    async (request, reply) => {
      const me = requestKey(request);
      const record = await createByok(deps, me.accountId, parseBody(createByokSchema, request.body));
      return reply.code(201).send({ data: renderByok(record) });
    },
    {
      auth: 'management',
      doc: {
        summary: 'Add a provider key (stored encrypted)',
        tag: 'BYOK',
        body: createByokSchema,
        responses: { 201: json(byokData, 'Created') },
        errors: [403],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      return { data: renderByok(await ownedByok(deps, me.accountId, request.params.id)) };
    },
    { auth: 'management', doc: { summary: 'One provider key', tag: 'BYOK', responses: { 200: json(byokData) } } },
  );

  routes.add(
    'PATCH',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      const record = await updateByok(deps, me.accountId, request.params.id, parseBody(updateByokSchema, request.body));
      return { data: renderByok(record) };
    },
    {
      auth: 'management',
      doc: {
        summary: 'Change a provider key',
        tag: 'BYOK',
        body: updateByokSchema,
        responses: { 200: json(byokData) },
      },
    },
  );

  routes.add(
    'DELETE',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      await deleteByok(deps, me.accountId, request.params.id);
      return { deleted: true };
    },
    {
      auth: 'management',
      doc: { summary: 'Delete a provider key', tag: 'BYOK', responses: { 200: json(deletedResponse) } },
    },
  );

  // Operator: after rotating TOLLGATE_MASTER_KEY (old key in TOLLGATE_MASTER_KEY_PREVIOUS), re-encrypt every entry.
  routes.add('POST', '/api/v1/admin/byok/rewrap', async () => ({ data: { reencrypted: await rewrapByok(deps) } }), {
    auth: 'admin',
    doc: {
      summary: 'Re-encrypt every provider key under the current master key',
      tag: 'Admin',
      responses: { 200: json(z.object({ data: z.object({ reencrypted: z.int() }) })) },
    },
  });
}
