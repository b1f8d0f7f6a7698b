/**
 * GET/PATCH /api/v1/account/notifications — which e-mail notifications an account holder receives.
 * Security notices (an exposed key) cannot be turned off.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { usdToUnits } from '../../core/money.js';
import { notificationSettingsPatchSchema, renderNotificationSettings, toSettingsPatch } from '../../pipeline/notification-settings.js';
import { authenticateAccount } from '../account-auth.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

export function registerNotificationRoutes(routes: RouteTable, services: Services): void {
  const defaultThreshold = usdToUnits(services.config.notifications.low_balance_threshold);
  // The account the request acts for: a management key, or the dashboard's session cookie (+ CSRF on PATCH).
  const accountOf = async (request: FastifyRequest, reply: FastifyReply): Promise<string> => (await authenticateAccount(services, request, reply)).accountId;

  routes.add('GET', '/api/v1/account/notifications', async (request, reply) => {
    const accountId = await accountOf(request, reply);
    return { data: renderNotificationSettings(await services.store.notifications.settings(accountId), defaultThreshold) };
  });

  routes.add('PATCH', '/api/v1/account/notifications', async (request, reply) => {
    const accountId = await accountOf(request, reply);
    const patch = toSettingsPatch(parseBody(notificationSettingsPatchSchema, request.body));
    const settings = await services.store.notifications.updateSettings(accountId, patch, services.now());
    return { data: renderNotificationSettings(settings, defaultThreshold) };
  });
}
