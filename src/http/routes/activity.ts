/**
 * The account holder's usage (docs/api.md and the dashboard contract): `/activity`,
 * `/activity/daily`, `/generations`, `/credits/history`.
 */
import {
  activity,
  creditHistory,
  dailyActivity,
  recentGenerations,
  type ActivityDeps,
} from '../../pipeline/activity.js';
import { requestAccount } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerActivityRoutes(routes: RouteTable, services: Services): void {
  const deps: ActivityDeps = { store: services.store, catalog: services.catalog, now: services.now };
  // A management key or the dashboard's session, resolved from the headers before anything else.
  const account = { auth: 'account' } as const;

  routes.add(
    'GET',
    '/api/v1/activity',
    async (request) => {
      const me = requestAccount(request);
      return activity(deps, me.accountId, request.query);
    },
    account,
  );

  routes.add(
    'GET',
    '/api/v1/activity/daily',
    async (request) => {
      const me = requestAccount(request);
      return dailyActivity(deps, me.accountId, request.query);
    },
    account,
  );

  routes.add(
    'GET',
    '/api/v1/generations',
    async (request) => {
      const me = requestAccount(request);
      return recentGenerations(deps, me.accountId, request.query);
    },
    account,
  );

  routes.add(
    'GET',
    '/api/v1/credits/history',
    async (request) => {
      const me = requestAccount(request);
      return creditHistory(deps, me.accountId, request.query);
    },
    account,
  );
}
