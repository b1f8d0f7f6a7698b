/** GET /key, GET /credits, GET /generation — the caller's own account (inference or management key; /credits also the dashboard's session). */
import { TollgateError } from '../../core/errors.js';
import { unitsToUsd } from '../../core/money.js';
import { renderKeyInfo, usageOf } from '../../pipeline/key-management.js';
import { renderGeneration } from '../../pipeline/generation-view.js';
import { requestAccount, requestKey } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerAccountRoutes(routes: RouteTable, services: Services): void {
  routes.add(
    'GET',
    '/api/v1/key',
    async (request) => {
      const key = requestKey(request);
      const [account, usage] = await Promise.all([
        services.store.getAccount(key.accountId),
        usageOf(services.keys, [key]),
      ]);
      if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
      const freeDaily = await services.freeModels.daily(account);
      return { data: renderKeyInfo(key, usage.get(key.hash)!, account.totalPurchased === 0n, freeDaily) };
    },
    { auth: 'any-key' },
  );

  routes.add(
    'GET',
    '/api/v1/credits',
    async (request) => {
      // Any key of the account, or the dashboard's session.
      const key = requestAccount(request);
      const account = await services.store.getAccount(key.accountId);
      if (!account) throw new TollgateError('auth.invalid_key', 'Invalid API key');
      return { data: { total_credits: unitsToUsd(account.totalCredits), total_usage: unitsToUsd(account.totalUsage) } };
    },
    { auth: 'account-any' },
  );

  routes.add(
    'GET',
    '/api/v1/generation',
    async (request) => {
      const key = requestKey(request);
      const id = (request.query as { id?: unknown }).id;
      if (typeof id !== 'string' || id.length === 0)
        throw new TollgateError('request.invalid_body', 'Query parameter "id" is required');
      const generation = id.length <= 200 ? await services.store.getGeneration(id) : null;
      if (!generation || generation.accountId !== key.accountId)
        throw new TollgateError('resource.not_found', `Generation ${id.slice(0, 200)} not found`);
      return { data: renderGeneration(generation) };
    },
    { auth: 'any-key' },
  );
}
