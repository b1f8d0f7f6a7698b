/**
 * The account holder's usage (api.md §3.7 and the dashboard contract): `/activity`,
 * `/activity/daily`, `/generations`, `/credits/history`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { activity, creditHistory, dailyActivity, recentGenerations, type ActivityDeps } from '../../pipeline/activity.js';
import { authenticateAccount } from '../account-auth.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerActivityRoutes(routes: RouteTable, services: Services): void {
  const deps: ActivityDeps = { store: services.store, catalog: services.catalog, now: services.now };
  // The dashboard's session or a management key: this one line is the account authentication of every route below.
  const account = (request: FastifyRequest, reply: FastifyReply) => authenticateAccount(services, request, reply, 'management');

  routes.add('GET', '/api/v1/activity', async (request, reply) => {
    const me = await account(request, reply);
    return activity(deps, me.accountId, request.query);
  });

  routes.add('GET', '/api/v1/activity/daily', async (request, reply) => {
    const me = await account(request, reply);
    return dailyActivity(deps, me.accountId, request.query);
  });

  routes.add('GET', '/api/v1/generations', async (request, reply) => {
    const me = await account(request, reply);
    return recentGenerations(deps, me.accountId, request.query);
  });

  routes.add('GET', '/api/v1/credits/history', async (request, reply) => {
    const me = await account(request, reply);
    return creditHistory(deps, me.accountId, request.query);
  });
}
