/** The operator's admin API (docs/api.md), behind TOLLGATE_ADMIN_TOKEN (declared per route: `auth: 'admin'`). */
import { z } from 'zod';
import {
  addCredits,
  addCreditsSchema,
  createAccount,
  createAccountSchema,
  getAccount,
  renderAccount,
} from '../../pipeline/accounts.js';
import {
  adminCreateKeySchema,
  createKey,
  deleteKey,
  keyByHash,
  listKeys,
  renderApiKey,
  updateKey,
  updateKeySchema,
  usageOf,
} from '../../pipeline/key-management.js';
import { disableExposedKey } from '../../pipeline/exposed-keys.js';
import { TollgateError } from '../../core/errors.js';
import { pageOffset } from '../page-offset.js';
import { passwordSchema, setAccountPassword } from '../../pipeline/sign-in.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

const compromisedSchema = z.strictObject({ reason: z.string().max(500).optional() });
const setPasswordSchema = z.strictObject({ password: passwordSchema });

const listKeysQuery = z.object({
  offset: pageOffset,
  include_disabled: z.enum(['true', 'false']).default('true'),
});

export function registerAdminRoutes(routes: RouteTable, services: Services): void {
  const deps = { store: services.store, bus: services.bus, now: services.now };
  const admin = { auth: 'admin' } as const;

  routes.add(
    'POST',
    '/api/v1/admin/accounts',
    async (request, reply) => {
      const account = await createAccount(deps, parseBody(createAccountSchema, request.body));
      return reply.code(201).send({ data: renderAccount(account) });
    },
    admin,
  );

  routes.add(
    'PUT',
    '/api/v1/admin/accounts/:id/password',
    async (request) => {
      const id = request.params.id;
      const { password } = parseBody(setPasswordSchema, request.body);
      await setAccountPassword(deps.store.accountAuth, id, password);
      // A password set by the operator (say, after a lost one) ends every session the old one opened.
      const revoked = await services.accountAuth.sessions.revokeAll(id);
      return { data: { updated: true, sessions_revoked: revoked } };
    },
    admin,
  );

  routes.add(
    'GET',
    '/api/v1/admin/accounts/:id',
    async (request) => {
      return { data: renderAccount(await getAccount(deps, request.params.id)) };
    },
    admin,
  );

  routes.add(
    'POST',
    '/api/v1/admin/accounts/:id/credits',
    async (request, reply) => {
      const { account, applied } = await addCredits(deps, request.params.id, parseBody(addCreditsSchema, request.body));
      // A replayed reference changes nothing: 200 with the current account instead of 201.
      return reply.code(applied ? 201 : 200).send({ data: renderAccount(account) });
    },
    admin,
  );

  routes.add(
    'POST',
    '/api/v1/admin/accounts/:id/keys',
    async (request, reply) => {
      const input = parseBody(adminCreateKeySchema, request.body);
      const { management, ...rest } = input;
      const created = await createKey(services.keys, request.params.id, rest, {
        management: management ?? false,
      });
      return reply.code(201).send({ data: renderApiKey(created.key), key: created.plaintext });
    },
    admin,
  );

  routes.add(
    'GET',
    '/api/v1/admin/accounts/:id/keys',
    async (request) => {
      const query = parseBody(listKeysQuery, request.query);
      const account = await getAccount(deps, request.params.id);
      const keys = await listKeys(deps, account.id, {
        offset: query.offset,
        limit: 100,
        includeDisabled: query.include_disabled === 'true',
      });
      const usage = await usageOf(services.keys, keys);
      return { data: keys.map((k) => renderApiKey(k, usage.get(k.hash))) };
    },
    admin,
  );

  routes.add(
    'POST',
    '/api/v1/admin/keys/:hash/compromised',
    async (request) => {
      const { reason } = parseBody(compromisedSchema, request.body);
      const hash = request.params.hash;
      // Disabled and the holder mailed in one transaction; a second report changes nothing and mails no one.
      const result = /^[0-9a-f]{64}$/.test(hash)
        ? await disableExposedKey(
            { store: services.store, bus: services.bus, mail: services.mail, now: services.now },
            hash,
            { url: null, source: null, reason: reason ?? null },
          )
        : null;
      if (!result) throw new TollgateError('resource.not_found', 'Key not found');
      request.log.warn(
        {
          key: result.key.hash.slice(0, 12),
          account: result.key.accountId,
          reason: reason ?? null,
          first_report: result.newly,
        },
        'key disabled as compromised',
      );
      return { data: renderApiKey(result.key) };
    },
    admin,
  );

  routes.add(
    'PATCH',
    '/api/v1/admin/keys/:hash',
    async (request) => {
      const hash = request.params.hash;
      const existing = await keyByHash(deps, hash);
      const key = await updateKey(services.keys, existing.accountId, hash, parseBody(updateKeySchema, request.body));
      const usage = await usageOf(services.keys, [key]);
      return { data: renderApiKey(key, usage.get(key.hash)) };
    },
    admin,
  );

  routes.add(
    'DELETE',
    '/api/v1/admin/keys/:hash',
    async (request) => {
      const hash = request.params.hash;
      const existing = await keyByHash(deps, hash);
      await deleteKey(services.keys, existing.accountId, hash);
      return { deleted: true };
    },
    admin,
  );
}
