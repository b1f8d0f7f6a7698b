/** The operator's admin API (api.md §6), behind TOLLGATE_ADMIN_TOKEN. */
import { z } from 'zod';
import { adminGuard } from '../../auth/admin-token.js';
import { addCredits, addCreditsSchema, createAccount, createAccountSchema, getAccount, renderAccount } from '../../pipeline/accounts.js';
import { adminCreateKeySchema, createKey, deleteKey, markCompromised, renderApiKey, updateKey, updateKeySchema, usageOf } from '../../pipeline/key-management.js';
import { TollgateError } from '../../core/errors.js';
import { passwordSchema, setAccountPassword } from '../../pipeline/sign-in.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

const compromisedSchema = z.strictObject({ reason: z.string().max(500).optional() });
const setPasswordSchema = z.strictObject({ password: passwordSchema });

export function registerAdminRoutes(routes: RouteTable, services: Services): void {
  const guard = adminGuard(services.config.adminToken);
  const deps = { store: services.store, bus: services.bus, now: services.now };

  routes.add('POST', '/api/v1/admin/accounts', async (request, reply) => {
    guard(request.headers.authorization);
    const account = await createAccount(deps, parseBody(createAccountSchema, request.body));
    return reply.code(201).send({ data: renderAccount(account) });
  });

  routes.add('PUT', '/api/v1/admin/accounts/:id/password', async (request) => {
    guard(request.headers.authorization);
    const id = (request.params as { id: string }).id;
    const { password } = parseBody(setPasswordSchema, request.body);
    await setAccountPassword(services.store.accountAuth, id, password);
    // A password set by the operator (say, after a lost one) ends every session the old one opened.
    const revoked = await services.accountAuth.sessions.revokeAll(id);
    return { data: { updated: true, sessions_revoked: revoked } };
  });

  routes.add('GET', '/api/v1/admin/accounts/:id', async (request) => {
    guard(request.headers.authorization);
    return { data: renderAccount(await getAccount(deps, (request.params as { id: string }).id)) };
  });

  routes.add('POST', '/api/v1/admin/accounts/:id/credits', async (request, reply) => {
    guard(request.headers.authorization);
    const { account, applied } = await addCredits(deps, (request.params as { id: string }).id, parseBody(addCreditsSchema, request.body));
    // A replayed reference changes nothing: 200 with the current account instead of 201.
    return reply.code(applied ? 201 : 200).send({ data: renderAccount(account) });
  });

  routes.add('POST', '/api/v1/admin/accounts/:id/keys', async (request, reply) => {
    guard(request.headers.authorization);
    const input = parseBody(adminCreateKeySchema, request.body);
    const { management, ...rest } = input;
    const created = await createKey(services.keys, (request.params as { id: string }).id, rest, { management: management ?? false });
    return reply.code(201).send({ data: renderApiKey(created.key), key: created.plaintext });
  });

  routes.add('GET', '/api/v1/admin/accounts/:id/keys', async (request) => {
    guard(request.headers.authorization);
    const account = await getAccount(deps, (request.params as { id: string }).id);
    const query = request.query as { include_disabled?: string; offset?: string };
    const offset = Number(query.offset ?? 0);
    if (!Number.isInteger(offset) || offset < 0) throw new TollgateError('request.invalid_body', 'offset must be a non-negative integer');
    const keys = await services.store.listKeys(account.id, { offset, limit: 100, includeDisabled: query.include_disabled !== 'false' });
    const usage = await usageOf(services.keys, keys);
    return { data: keys.map((k) => renderApiKey(k, usage.get(k.hash))) };
  });

  routes.add('POST', '/api/v1/admin/keys/:hash/compromised', async (request) => {
    guard(request.headers.authorization);
    const { reason } = parseBody(compromisedSchema, request.body);
    const key = await markCompromised(services.keys, (request.params as { hash: string }).hash);
    request.log.warn({ key: key.hash.slice(0, 12), account: key.accountId, reason: reason ?? null }, 'key disabled as compromised');
    return { data: renderApiKey(key) };
  });

  routes.add('PATCH', '/api/v1/admin/keys/:hash', async (request) => {
    guard(request.headers.authorization);
    const hash = (request.params as { hash: string }).hash;
    const existing = /^[0-9a-f]{64}$/.test(hash) ? await services.store.getKey(hash) : null;
    if (!existing) throw new TollgateError('resource.not_found', 'Key not found');
    const key = await updateKey(services.keys, existing.accountId, hash, parseBody(updateKeySchema, request.body));
    const usage = await usageOf(services.keys, [key]);
    return { data: renderApiKey(key, usage.get(key.hash)) };
  });

  routes.add('DELETE', '/api/v1/admin/keys/:hash', async (request) => {
    guard(request.headers.authorization);
    const hash = (request.params as { hash: string }).hash;
    const existing = /^[0-9a-f]{64}$/.test(hash) ? await services.store.getKey(hash) : null;
    if (!existing) throw new TollgateError('resource.not_found', 'Key not found');
    await deleteKey(services.keys, existing.accountId, hash);
    return { deleted: true };
  });
}
