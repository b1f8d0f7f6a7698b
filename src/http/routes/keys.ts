/** Key management with a management key (docs/api.md) or the dashboard's session. */
import { z } from 'zod';
import { TollgateError } from '../../core/errors.js';
import {
  adminCreateKeySchema,
  createKey,
  deleteKey,
  listKeys,
  ownedKey,
  renderOwnedKeys,
  updateKey,
  updateKeySchema,
  usageOf,
} from '../../pipeline/key-management.js';
import type { KeyRecord, KeyUsage } from '../../store/types.js';
import { parseBody } from '../parse-body.js';
import { requestAccount } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { deletedResponse, ownedApiKeySchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';
import { pageOffset } from '../../core/page-offset.js';

const PAGE = 100;

const listQuery = z.object({
  offset: pageOffset,
  include_disabled: z.enum(['true', 'false']).default('false'),
});

export function registerKeyRoutes(routes: RouteTable, services: Services): void {
  const account = 'account' as const;
  const one = z.object({ data: ownedApiKeySchema });
  const render = (keys: readonly KeyRecord[], usage: Map<string, KeyUsage>) =>
    renderOwnedKeys(services.keys, keys, usage);

  routes.add(
    'GET',
    '/api/v1/keys',
    async (request) => {
      const me = requestAccount(request);
      const query = parseBody(listQuery, request.query);
      const keys = await listKeys(services.keys, me.accountId, {
        offset: query.offset,
        limit: PAGE,
        includeDisabled: query.include_disabled === 'true',
      });
      const usage = await usageOf(services.keys, keys);
      return { data: await render(keys, usage) };
    },
    {
      auth: account,
      doc: {
        summary: 'List the account’s keys (100 per page)',
        tag: 'Keys',
        query: listQuery,
        responses: { 200: json(z.object({ data: z.array(ownedApiKeySchema) })) },
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/keys',
    async (request, reply) => {
      const me = requestAccount(request);
      const { management, ...input } = parseBody(adminCreateKeySchema, request.body);
      // Only the holder (signed in) may mint management keys; a management key cannot mint its peers.
      if (management && me.via !== 'session')
        throw new TollgateError(
          'request.invalid_body',
          'management: only a signed-in account holder can create management keys',
        );
      const created = await createKey(services.keys, me.accountId, input, { management: management ?? false });
      const [data] = await render([created.key], new Map());
      return reply.code(201).send({ data, key: created.plaintext });
    },
    {
      auth: account,
      doc: {
        summary: 'Create a key',
        description: 'The full key is in `key`, this once; only its hash is kept.',
        tag: 'Keys',
        body: adminCreateKeySchema,
        responses: { 201: json(z.object({ data: ownedApiKeySchema, key: z.string() }), 'Created') },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/keys/:hash',
    async (request) => {
      const me = requestAccount(request);
      const key = await ownedKey(services.keys, me.accountId, request.params.hash);
      const usage = await usageOf(services.keys, [key]);
      return { data: (await render([key], usage))[0] };
    },
    { auth: account, doc: { summary: 'One key of the account', tag: 'Keys', responses: { 200: json(one) } } },
  );

  routes.add(
    'PATCH',
    '/api/v1/keys/:hash',
    async (request) => {
      const me = requestAccount(request);
      const input = parseBody(updateKeySchema, request.body);
      const key = await updateKey(services.keys, me.accountId, request.params.hash, input);
      const usage = await usageOf(services.keys, [key]);
      return { data: (await render([key], usage))[0] };
    },
    {
      auth: account,
      doc: { summary: 'Change a key', tag: 'Keys', body: updateKeySchema, responses: { 200: json(one) } },
    },
  );

  routes.add(
    'DELETE',
    '/api/v1/keys/:hash',
    async (request) => {
      const me = requestAccount(request);
      await deleteKey(services.keys, me.accountId, request.params.hash);
      return { deleted: true };
    },
    { auth: account, doc: { summary: 'Delete a key', tag: 'Keys', responses: { 200: json(deletedResponse) } } },
  );
}
