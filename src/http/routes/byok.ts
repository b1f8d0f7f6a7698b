/** BYOK provider keys with a management key (api.md §3.5). */
import { adminGuard } from '../../auth/admin-token.js';
import { createByok, createByokSchema, deleteByok, ownedByok, renderByok, rewrapByok, updateByok, updateByokSchema, type ByokDeps } from '../../pipeline/byok.js';
import { parseBody } from '../parse-body.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../authenticate.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerByokRoutes(routes: RouteTable, services: Services, deps: ByokDeps): void {
  const manager = (request: FastifyRequest, reply: FastifyReply) => authenticate(services, request, reply, 'management');
  const idOf = (params: unknown) => (params as { id: string }).id;

  routes.add('GET', '/api/v1/byok', async (request, reply) => {
    const me = await manager(request, reply);
    const records = await services.store.byok.list(me.accountId);
    return { data: records.map(renderByok), total_count: records.length };
  });

  routes.add('POST', '/api/v1/byok', async (request, reply) => {
    const me = await manager(request, reply);
    const record = await createByok(deps, me.accountId, parseBody(createByokSchema, request.body));
    return reply.code(201).send({ data: renderByok(record) });
  });

  routes.add('GET', '/api/v1/byok/:id', async (request, reply) => {
    const me = await manager(request, reply);
    return { data: renderByok(await ownedByok(deps, me.accountId, idOf(request.params))) };
  });

  routes.add('PATCH', '/api/v1/byok/:id', async (request, reply) => {
    const me = await manager(request, reply);
    const record = await updateByok(deps, me.accountId, idOf(request.params), parseBody(updateByokSchema, request.body));
    return { data: renderByok(record) };
  });

  routes.add('DELETE', '/api/v1/byok/:id', async (request, reply) => {
    const me = await manager(request, reply);
    await deleteByok(deps, me.accountId, idOf(request.params));
    return { deleted: true };
  });

  // Operator: after rotating TOLLGATE_MASTER_KEY (old key in TOLLGATE_MASTER_KEY_PREVIOUS), re-encrypt every entry.
  const guard = adminGuard(services.config.adminToken);
  routes.add('POST', '/api/v1/admin/byok/rewrap', async (request) => {
    guard(request.headers.authorization);
    return { data: { reencrypted: await rewrapByok(deps) } };
  });
}
