/** An account holder's notification switches (`GET/PATCH /account/notifications`, docs/api.md). */
import type { notificationSettingsSchema } from './response-schemas.js';
import { z } from 'zod';
import { unitsToUsd, usdToUnits, type Units } from '../core/money.js';
import type { NotificationSettings, NotificationSettingsPatch } from '../store/mail-types.js';
import type { Store } from '../store/types.js';

export interface NotificationSettingsDeps {
  store: Store;
  now(): number;
  /** The low-balance threshold of an account that set none (`notifications.low_balance_threshold`). */
  defaultThreshold: Units;
}

const threshold = z
  .number()
  .nonnegative('threshold must be >= 0')
  .max(1e9, 'threshold is too large')
  .refine((v) => {
    try {
      usdToUnits(v);
      return true;
    } catch {
      return false;
    }
  }, 'threshold has more than 9 decimal places');

export const notificationSettingsPatchSchema = z.strictObject({
  // A null threshold goes back to the operator's default (the dashboard sends it for an emptied field).
  low_balance: z
    .strictObject({ enabled: z.boolean().optional(), threshold: threshold.nullable().optional() })
    .optional(),
  key_limit: z.strictObject({ enabled: z.boolean().optional() }).optional(),
  key_expiry: z.strictObject({ enabled: z.boolean().optional() }).optional(),
});

export function toSettingsPatch(input: z.output<typeof notificationSettingsPatchSchema>): NotificationSettingsPatch {
  const patch: NotificationSettingsPatch = {};
  if (input.low_balance?.enabled !== undefined) patch.lowBalanceEnabled = input.low_balance.enabled;
  const threshold = input.low_balance?.threshold;
  if (threshold !== undefined) patch.lowBalanceThreshold = threshold === null ? null : usdToUnits(threshold);
  if (input.key_limit?.enabled !== undefined) patch.keyLimitEnabled = input.key_limit.enabled;
  if (input.key_expiry?.enabled !== undefined) patch.keyExpiryEnabled = input.key_expiry.enabled;
  return patch;
}

export function renderNotificationSettings(
  settings: NotificationSettings,
  defaultThreshold: Units,
): z.output<typeof notificationSettingsSchema> {
  return {
    low_balance: {
      enabled: settings.lowBalanceEnabled,
      threshold: unitsToUsd(settings.lowBalanceThreshold ?? defaultThreshold),
    },
    key_limit: { enabled: settings.keyLimitEnabled },
    key_expiry: { enabled: settings.keyExpiryEnabled },
  };
}

export async function notificationSettingsOf(deps: NotificationSettingsDeps, accountId: string) {
  return renderNotificationSettings(await deps.store.notifications.settings(accountId), deps.defaultThreshold);
}

export async function updateNotificationSettings(
  deps: NotificationSettingsDeps,
  accountId: string,
  input: z.output<typeof notificationSettingsPatchSchema>,
) {
  const settings = await deps.store.notifications.updateSettings(accountId, toSettingsPatch(input), deps.now());
  return renderNotificationSettings(settings, deps.defaultThreshold);
}
