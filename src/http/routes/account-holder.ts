/**
 * What the dashboard reads about the account itself, with the session cookie or a management key:
 * `GET /account`, and the OAuth authorizations (`GET /apps`, `DELETE /apps/{id}` revokes the key).
 */
import { accountOverview } from '../../pipeline/accounts.js';
import { listAppGrants, revokeAppGrant } from '../../pipeline/app-grants.js';
import { authenticateAccount } from '../account-auth.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { accountOverviewSchema, appGrantSchema, deletedResponse } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';
import type { AccountRecord } from '../../store/types.js';
import { isStoreUnavailable } from '../../billing/store-health.js';

export function registerAccountHolderRoutes(routes: RouteTable, services: Services): void {
  routes.add(
    'GET',
    '/api/v1/account',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      const servesFree = [...services.catalog.models.values()].some((model) => model.isFree);
      // The counters' store (Redis) down fails free requests and GET /key; the account's own page
      // still answers, without today's count.
      const freeDaily = servesFree
        ? (account: AccountRecord) =>
            services.freeModels.daily(account).catch((error: unknown) => {
              if (isStoreUnavailable(error)) return null;
              throw error;
            })
        : null;
      return { data: await accountOverview(services.keys, caller.accountId, freeDaily) };
    },
    {
      auth: 'account',
      doc: {
        summary: 'The account: credits, usage, balance and credit granted to apps',
        tag: 'Account',
        responses: { 200: json(z.object({ data: accountOverviewSchema })) },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/apps',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      return { data: await listAppGrants(services.keys, caller.accountId) };
    },
    {
      auth: 'account',
      doc: {
        summary: 'The OAuth apps the holder approved, with their keys',
        tag: 'Account',
        responses: { 200: json(z.object({ data: z.array(appGrantSchema) })) },
      },
    },
  );

  routes.add(
    'DELETE',
    '/api/v1/apps/:id',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      const id = request.params.id;
      await revokeAppGrant(services.keys, caller.accountId, id);
      return { deleted: true };
    },
    {
      auth: 'account',
      doc: {
        summary: 'Revoke an app: deletes the key it was given',
        tag: 'Account',
        responses: { 200: json(deletedResponse) },
      },
    },
  );
}
