/**
 * The account holder's usage (docs/api.md and the dashboard contract): `/activity`,
 * `/activity/daily`, `/generations`, `/credits/history`.
 */
import {
  activityQuery,
  creditsQuery,
  dailyQuery,
  generationsQuery,
  activity,
  creditHistory,
  dailyActivity,
  recentGenerations,
  type ActivityDeps,
} from '../../pipeline/activity.js';
import { requestAccount } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import {
  activityResponse,
  creditHistoryResponse,
  dailyActivityResponse,
  recentGenerationsResponse,
} from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

export function registerActivityRoutes(routes: RouteTable, services: Services): void {
  const deps: ActivityDeps = { store: services.store, catalog: services.catalog, now: services.now };
  // A management key or the dashboard's session, resolved from the headers before anything else.
  const account = 'account' as const;

  routes.add(
    'GET',
    '/api/v1/activity',
    async (request) => {
      const me = requestAccount(request);
      return activity(deps, me.accountId, request.query);
    },
    {
      auth: account,
      doc: {
        summary: 'Usage per day, model and provider over the last 30 completed UTC days',
        tag: 'Usage',
        query: activityQuery,
        responses: { 200: json(activityResponse) },
        errors: [404],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/activity/daily',
    async (request) => {
      const me = requestAccount(request);
      return dailyActivity(deps, me.accountId, request.query);
    },
    {
      auth: account,
      doc: {
        summary: 'Daily usage series grouped by model, key or app (the dashboard’s charts)',
        tag: 'Usage',
        query: dailyQuery,
        responses: { 200: json(dailyActivityResponse) },
        errors: [404],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/generations',
    async (request) => {
      const me = requestAccount(request);
      return recentGenerations(deps, me.accountId, request.query);
    },
    {
      auth: account,
      doc: {
        summary: 'Recent generations, newest first',
        tag: 'Usage',
        query: generationsQuery,
        responses: { 200: json(recentGenerationsResponse) },
        errors: [404],
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/credits/history',
    async (request) => {
      const me = requestAccount(request);
      return creditHistory(deps, me.accountId, request.query);
    },
    {
      auth: account,
      doc: {
        summary: 'Credit grants and purchases, newest first (100 per page)',
        tag: 'Usage',
        query: creditsQuery,
        responses: { 200: json(creditHistoryResponse) },
      },
    },
  );
}
