/** GET /key, GET /credits, GET /generation — the caller's own account (inference or management key; /credits also the dashboard's session). */
import { z } from 'zod';
import { unitsToUsd } from '../../core/money.js';
import { accountOfCaller } from '../../pipeline/accounts.js';
import { renderKeyInfo, usageOf } from '../../pipeline/key-management.js';
import { generationOf } from '../../pipeline/generation-view.js';
import { parseBody } from '../parse-body.js';
import { requestAccount, requestKey } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { creditsSchema, generationSchema, keyInfoSchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

/** `?id=`: a missing or repeated id is answered by generationOf (400 "id is required"). */
const GENERATION_QUERY = z.looseObject({
  id: z.unknown().optional().meta({ description: 'The generation id (required: without it, 400)', type: 'string' }),
});

export function registerAccountRoutes(routes: RouteTable, services: Services): void {
  routes.add(
    'GET',
    '/api/v1/key',
    async (request) => {
      const key = requestKey(request);
      const [account, usage] = await Promise.all([
        accountOfCaller(services.keys, key.accountId),
        usageOf(services.keys, [key]),
      ]);
      const freeDaily = await services.freeModels.daily(account);
      return { data: renderKeyInfo(key, usage.get(key.hash)!, account.totalPurchased === 0n, freeDaily) };
    },
    {
      auth: 'any-key',
      doc: {
        summary: 'The calling key: its limit, usage and free-model allowance',
        tag: 'Keys',
        responses: { 200: json(z.object({ data: keyInfoSchema })) },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/credits',
    async (request) => {
      // Any key of the account, or the dashboard's session.
      const key = requestAccount(request);
      const account = await accountOfCaller(services.keys, key.accountId);
      return { data: { total_credits: unitsToUsd(account.totalCredits), total_usage: unitsToUsd(account.totalUsage) } };
    },
    {
      auth: 'account-any',
      doc: {
        summary: 'The account’s credits and usage',
        tag: 'Keys',
        responses: { 200: json(z.object({ data: creditsSchema })) },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/generation',
    async (request) => {
      const key = requestKey(request);
      const { id } = parseBody(GENERATION_QUERY, request.query);
      return { data: await generationOf(services.keys, key.accountId, typeof id === 'string' ? id : '') };
    },
    {
      auth: 'any-key',
      doc: {
        summary: 'One generation of the account, by id',
        tag: 'Usage',
        query: GENERATION_QUERY,
        responses: { 200: json(z.object({ data: generationSchema })) },
        errors: [404],
      },
    },
  );
}
