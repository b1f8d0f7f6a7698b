/**
 * Public rankings (docs/api.md): no authentication. With `rankings.public: false` the routes are not
 * registered at all, so they answer exactly as unknown routes do (404, and 404 for other methods).
 */
import {
  appRankings,
  appRankingsQuery,
  rankingsDaily,
  rankingsDailyQuery,
  rankingsSummary,
  summaryQuery,
  type RankingsDeps,
} from '../../pipeline/rankings.js';
import {
  appRankingsResponse,
  rankingsDailyResponse,
  rankingsSummaryResponse,
} from '../../pipeline/response-schemas.js';
import { AsyncMutex } from '../../store/async-mutex.js';
import { json } from '../route-doc.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerRankingsRoutes(routes: RouteTable, services: Services): void {
  if (!services.config.rankings.public) return;
  const deps: RankingsDeps = {
    store: services.store,
    catalog: services.catalog,
    minAccounts: services.config.rankings.min_accounts,
    now: services.now,
    reads: new AsyncMutex(),
  };
  routes.add('GET', '/api/v1/datasets/app-rankings', async (request) => appRankings(deps, request.query), {
    auth: 'none',
    doc: {
      summary: 'Apps ranked by tokens (popular or trending) over a window of days',
      tag: 'Rankings',
      query: appRankingsQuery,
      responses: { 200: json(appRankingsResponse) },
    },
  });
  routes.add('GET', '/api/v1/datasets/rankings-daily', async (request) => rankingsDaily(deps, request.query), {
    auth: 'none',
    doc: {
      summary: 'Tokens per model per day, week or month (the top 50, then `other`)',
      tag: 'Rankings',
      query: rankingsDailyQuery,
      responses: { 200: json(rankingsDailyResponse) },
    },
  });
  routes.add('GET', '/api/v1/rankings/summary', async (request) => rankingsSummary(deps, request.query), {
    auth: 'none',
    doc: {
      summary: 'Top apps and models of today, this week or this month (the dashboard’s rankings page)',
      tag: 'Rankings',
      query: summaryQuery,
      responses: { 200: json(rankingsSummaryResponse) },
    },
  });
}
