/** Key management with a management key (api.md §3.2). */
import { z } from 'zod';
import { createKey, createKeySchema, deleteKey, ownedKey, renderApiKey, updateKey, updateKeySchema, usageOf } from '../../pipeline/key-management.js';
import { parseBody } from '../parse-body.js';
import { requestKey } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';
import { pageOffset } from '../page-offset.js';

const PAGE = 100;

const listQuery = z.object({
  offset: pageOffset,
  include_disabled: z.enum(['true', 'false']).default('false'),
});

export function registerKeyRoutes(routes: RouteTable, services: Services): void {
  const management = { auth: 'management' } as const;

  routes.add('GET', '/api/v1/keys', async (request) => {
    const me = requestKey(request);
    const query = parseBody(listQuery, request.query);
    const keys = await services.store.listKeys(me.accountId, { offset: query.offset, limit: PAGE, includeDisabled: query.include_disabled === 'true' });
    const usage = await usageOf(services.keys, keys);
    return { data: keys.map((k) => renderApiKey(k, usage.get(k.hash))) };
  }, management);

  routes.add('POST', '/api/v1/keys', async (request, reply) => {
    const me = requestKey(request);
    const input = parseBody(createKeySchema, request.body);
    const created = await createKey(services.keys, me.accountId, input, { management: false });
    return reply.code(201).send({ data: renderApiKey(created.key), key: created.plaintext });
  }, management);

  routes.add('GET', '/api/v1/keys/:hash', async (request) => {
    const me = requestKey(request);
    const key = await ownedKey(services.keys, me.accountId, (request.params as { hash: string }).hash);
    const usage = await usageOf(services.keys, [key]);
    return { data: renderApiKey(key, usage.get(key.hash)) };
  }, management);

  routes.add('PATCH', '/api/v1/keys/:hash', async (request) => {
    const me = requestKey(request);
    const input = parseBody(updateKeySchema, request.body);
    const key = await updateKey(services.keys, me.accountId, (request.params as { hash: string }).hash, input);
    const usage = await usageOf(services.keys, [key]);
    return { data: renderApiKey(key, usage.get(key.hash)) };
  }, management);

  routes.add('DELETE', '/api/v1/keys/:hash', async (request) => {
    const me = requestKey(request);
    await deleteKey(services.keys, me.accountId, (request.params as { hash: string }).hash);
    return { deleted: true };
  }, management);
}
