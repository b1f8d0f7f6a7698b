/**
 * Public rankings (docs/api.md): no authentication. With `rankings.public: false` the routes are not
 * registered at all, so they answer exactly as unknown routes do (404, and 404 for other methods).
 */
import { appRankings, rankingsDaily, rankingsSummary, type RankingsDeps } from '../../pipeline/rankings.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerRankingsRoutes(routes: RouteTable, services: Services): void {
  if (!services.config.rankings.public) return;
  const deps: RankingsDeps = {
    store: services.store,
    catalog: services.catalog,
    minAccounts: services.config.rankings.min_accounts,
    now: services.now,
  };
  routes.add('GET', '/api/v1/datasets/app-rankings', async (request) => appRankings(deps, request.query), {
    auth: 'none',
  });
  routes.add('GET', '/api/v1/datasets/rankings-daily', async (request) => rankingsDaily(deps, request.query), {
    auth: 'none',
  });
  routes.add('GET', '/api/v1/rankings/summary', async (request) => rankingsSummary(deps, request.query), {
    auth: 'none',
  });
}
