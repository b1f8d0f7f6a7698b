/** Key management with a management key (api.md §3.2). */
import { z } from 'zod';
import { createKey, createKeySchema, deleteKey, ownedKey, renderApiKey, updateKey, updateKeySchema, usageOf } from '../../pipeline/key-management.js';
import { parseBody } from '../parse-body.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../authenticate.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

const PAGE = 100;

const listQuery = z.object({
  offset: z.coerce.number().int().nonnegative().max(1_000_000).default(0),
  include_disabled: z.enum(['true', 'false']).default('false'),
});

export function registerKeyRoutes(routes: RouteTable, services: Services): void {
  const manager = (request: FastifyRequest, reply: FastifyReply) => authenticate(services, request, reply, 'management');

  routes.add('GET', '/api/v1/keys', async (request, reply) => {
    const me = await manager(request, reply);
    const query = parseBody(listQuery, request.query);
    const keys = await services.store.listKeys(me.accountId, { offset: query.offset, limit: PAGE, includeDisabled: query.include_disabled === 'true' });
    const usage = await usageOf(services.keys, keys);
    return { data: keys.map((k) => renderApiKey(k, usage.get(k.hash))) };
  });

  routes.add('POST', '/api/v1/keys', async (request, reply) => {
    const me = await manager(request, reply);
    const input = parseBody(createKeySchema, request.body);
    const created = await createKey(services.keys, me.accountId, input, { management: false });
    return reply.code(201).send({ data: renderApiKey(created.key), key: created.plaintext });
  });

  routes.add('GET', '/api/v1/keys/:hash', async (request, reply) => {
    const me = await manager(request, reply);
    const key = await ownedKey(services.keys, me.accountId, (request.params as { hash: string }).hash);
    const usage = await usageOf(services.keys, [key]);
    return { data: renderApiKey(key, usage.get(key.hash)) };
  });

  routes.add('PATCH', '/api/v1/keys/:hash', async (request, reply) => {
    const me = await manager(request, reply);
    const input = parseBody(updateKeySchema, request.body);
    const key = await updateKey(services.keys, me.accountId, (request.params as { hash: string }).hash, input);
    const usage = await usageOf(services.keys, [key]);
    return { data: renderApiKey(key, usage.get(key.hash)) };
  });

  routes.add('DELETE', '/api/v1/keys/:hash', async (request, reply) => {
    const me = await manager(request, reply);
    await deleteKey(services.keys, me.accountId, (request.params as { hash: string }).hash);
    return { deleted: true };
  });
}
