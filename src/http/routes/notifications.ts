/**
 * GET/PATCH /api/v1/account/notifications — which e-mail notifications an account holder receives.
 * Security notices (an exposed key) cannot be turned off.
 */
import { usdToUnits } from '../../core/money.js';
import {
  notificationSettingsOf,
  notificationSettingsPatchSchema,
  updateNotificationSettings,
} from '../../pipeline/notification-settings.js';
import { requestAccount } from '../route-auth.js';
import { parseBody } from '../parse-body.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { notificationSettingsSchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

export function registerNotificationRoutes(routes: RouteTable, services: Services): void {
  const deps = {
    store: services.store,
    now: services.now,
    defaultThreshold: usdToUnits(services.config.notifications.low_balance_threshold),
  };
  // A management key or the dashboard's session (with the CSRF defence on PATCH), from the headers.
  const settings = json(z.object({ data: notificationSettingsSchema }));

  routes.add(
    'GET',
    '/api/v1/account/notifications',
    async (request) => {
      const { accountId } = requestAccount(request);
      return { data: await notificationSettingsOf(deps, accountId) };
    },
    {
      auth: 'account',
      doc: { summary: 'Which e-mail notifications the holder receives', tag: 'Account', responses: { 200: settings } },
    },
  );

  routes.add(
    'PATCH',
    '/api/v1/account/notifications',
    async (request) => {
      const { accountId } = requestAccount(request);
      const input = parseBody(notificationSettingsPatchSchema, request.body);
      return { data: await updateNotificationSettings(deps, accountId, input) };
    },
    {
      auth: 'account',
      doc: {
        summary: 'Turn notifications on or off; set the low-balance threshold',
        tag: 'Account',
        body: notificationSettingsPatchSchema,
        responses: { 200: settings },
      },
    },
  );
}
