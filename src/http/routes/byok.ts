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
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerByokRoutes(routes: RouteTable, services: Services, deps: ByokDeps): void {
  const management = { auth: 'management' } as const;

  routes.add(
    'GET',
    '/api/v1/byok',
    async (request) => {
      const me = requestKey(request);
      const records = await listByok(deps, me.accountId);
      return { data: records, total_count: records.length };
    },
    management,
  );

  routes.add(
    'POST',
    '/api/v1/byok',
    async (request, reply) => {
      const me = requestKey(request);
      const record = await createByok(deps, me.accountId, parseBody(createByokSchema, request.body));
      return reply.code(201).send({ data: renderByok(record) });
    },
    management,
  );

  routes.add(
    'GET',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      return { data: renderByok(await ownedByok(deps, me.accountId, request.params.id)) };
    },
    management,
  );

  routes.add(
    'PATCH',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      const record = await updateByok(deps, me.accountId, request.params.id, parseBody(updateByokSchema, request.body));
      return { data: renderByok(record) };
    },
    management,
  );

  routes.add(
    'DELETE',
    '/api/v1/byok/:id',
    async (request) => {
      const me = requestKey(request);
      await deleteByok(deps, me.accountId, request.params.id);
      return { deleted: true };
    },
    management,
  );

  // Operator: after rotating TOLLGATE_MASTER_KEY (old key in TOLLGATE_MASTER_KEY_PREVIOUS), re-encrypt every entry.
  routes.add('POST', '/api/v1/admin/byok/rewrap', async () => ({ data: { reencrypted: await rewrapByok(deps) } }), {
    auth: 'admin',
  });
}
