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
  renderOwnedKeys,
  updateKey,
  updateKeySchema,
  usageOf,
} from '../../pipeline/key-management.js';
import { disableExposedKey, exposureText } from '../../pipeline/exposed-keys.js';
import { TollgateError } from '../../core/errors.js';
import { pageOffset } from '../../core/page-offset.js';
import { passwordSchema, setAccountPassword } from '../../pipeline/sign-in.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { accountSchema, apiKeySchema, deletedResponse, ownedApiKeySchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

const compromisedSchema = z.strictObject({ reason: z.string().max(500).optional() });
const setPasswordSchema = z.strictObject({ password: passwordSchema });

const accountData = z.object({ data: accountSchema });
const ownedKeyData = z.object({ data: ownedApiKeySchema });

const listKeysQuery = z.object({
  offset: pageOffset,
  include_disabled: z.enum(['true', 'false']).default('true'),
});

export function registerAdminRoutes(routes: RouteTable, services: Services): void {
  const deps = { store: services.store, bus: services.bus, now: services.now };

  routes.add(
    'POST',
    '/api/v1/admin/accounts',
    async (request, reply) => {
      const account = await createAccount(deps, parseBody(createAccountSchema, request.body));
      return reply.code(201).send({ data: renderAccount(account) });
    },
    {
      auth: 'admin',
      doc: {
        summary: 'Create an account',
        tag: 'Admin',
        body: createAccountSchema,
        responses: { 201: json(accountData, 'Created') },
        errors: [409],
      },
    },
  );

  routes.add(
    'PUT',
    '/api/v1/admin/accounts/:id/password',
    async (request) => {
      const id = request.params.id;
      const { password } = parseBody(setPasswordSchema, request.body);
      await setAccountPassword(deps.store.accountAuth, id, password, services.now());
      // A password set by the operator (say, after a lost one) ends every session the old one opened.
      const revoked = await services.accountAuth.sessions.revokeAll(id);
      return { data: { updated: true, sessions_revoked: revoked } };
    },
    {
      auth: 'admin',
      doc: {
        summary: 'Set an account’s password (ends its sessions)',
        tag: 'Admin',
        body: setPasswordSchema,
        responses: {
          200: json(z.object({ data: z.object({ updated: z.literal(true), sessions_revoked: z.int() }) })),
        },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/admin/accounts/:id',
    async (request) => {
      return { data: renderAccount(await getAccount(deps, request.params.id)) };
    },
    { auth: 'admin', doc: { summary: 'One account', tag: 'Admin', responses: { 200: json(accountData) } } },
  );

  routes.add(
    'POST',
    '/api/v1/admin/accounts/:id/credits',
    async (request, reply) => {
      const { account, applied } = await addCredits(deps, request.params.id, parseBody(addCreditsSchema, request.body));
      // A replayed reference changes nothing: 200 with the current account instead of 201.
      return reply.code(applied ? 201 : 200).send({ data: renderAccount(account) });
    },
    {
      auth: 'admin',
      doc: {
        summary: 'Add credits (idempotent per `reference`)',
        tag: 'Admin',
        body: addCreditsSchema,
        responses: {
          201: json(accountData, 'Credits added'),
          200: json(accountData, 'The reference was seen before: nothing changed'),
        },
        // The reference was used for a credit of another amount or kind.
        errors: [409],
      },
    },
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
    {
      auth: 'admin',
      doc: {
        summary: 'Create a key for an account',
        tag: 'Admin',
        body: adminCreateKeySchema,
        responses: { 201: json(z.object({ data: apiKeySchema, key: z.string() }), 'Created') },
      },
    },
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
      return { data: await renderOwnedKeys(services.keys, keys, usage) };
    },
    {
      auth: 'admin',
      doc: {
        summary: 'An account’s keys (100 per page)',
        tag: 'Admin',
        query: listKeysQuery,
        responses: { 200: json(z.object({ data: z.array(ownedApiKeySchema) })) },
      },
    },
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
            { reportedBy: 'operator', url: null, source: null, reason: reason ?? null },
          )
        : null;
      if (!result) throw new TollgateError('resource.not_found', 'Key not found');
      request.log.warn(
        {
          key: result.key.hash.slice(0, 12),
          account: result.key.accountId,
          reason: exposureText(reason ?? null, 500),
          first_report: result.newly,
        },
        'key disabled as compromised',
      );
      const usage = await usageOf(services.keys, [result.key]);
      // As the listing shows it: `compromised` and `app` too (the operator saw only `disabled`).
      return { data: (await renderOwnedKeys(services.keys, [result.key], usage))[0]! };
    },
    {
      auth: 'admin',
      doc: {
        summary: 'Disable a key as compromised and tell its holder',
        tag: 'Admin',
        body: compromisedSchema,
        responses: { 200: json(ownedKeyData) },
      },
    },
  );

  routes.add(
    'PATCH',
    '/api/v1/admin/keys/:hash',
    async (request) => {
      const hash = request.params.hash;
      const existing = await keyByHash(deps, hash);
      const key = await updateKey(services.keys, existing.accountId, hash, parseBody(updateKeySchema, request.body));
      const usage = await usageOf(services.keys, [key]);
      return { data: (await renderOwnedKeys(services.keys, [key], usage))[0]! };
    },
    {
      auth: 'admin',
      doc: { summary: 'Change any key', tag: 'Admin', body: updateKeySchema, responses: { 200: json(ownedKeyData) } },
    },
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
    { auth: 'admin', doc: { summary: 'Delete any key', tag: 'Admin', responses: { 200: json(deletedResponse) } } },
  );
}
