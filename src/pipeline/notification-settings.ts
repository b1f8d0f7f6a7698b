/** An account holder's notification switches (`GET/PATCH /account/notifications`, dashboard-docs/api.md). */
import { z } from 'zod';
import { unitsToUsd, usdToUnits, type Units } from '../core/money.js';
import type { NotificationSettings, NotificationSettingsPatch } from '../store/mail-types.js';

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
  low_balance: z.strictObject({ enabled: z.boolean().optional(), threshold: threshold.optional() }).optional(),
  key_limit: z.strictObject({ enabled: z.boolean().optional() }).optional(),
  key_expiry: z.strictObject({ enabled: z.boolean().optional() }).optional(),
});

export function toSettingsPatch(input: z.output<typeof notificationSettingsPatchSchema>): NotificationSettingsPatch {
  const patch: NotificationSettingsPatch = {};
  if (input.low_balance?.enabled !== undefined) patch.lowBalanceEnabled = input.low_balance.enabled;
  if (input.low_balance?.threshold !== undefined) patch.lowBalanceThreshold = usdToUnits(input.low_balance.threshold);
  if (input.key_limit?.enabled !== undefined) patch.keyLimitEnabled = input.key_limit.enabled;
  if (input.key_expiry?.enabled !== undefined) patch.keyExpiryEnabled = input.key_expiry.enabled;
  return patch;
}

export function renderNotificationSettings(settings: NotificationSettings, defaultThreshold: Units) {
  return {
    low_balance: {
      enabled: settings.lowBalanceEnabled,
      threshold: unitsToUsd(settings.lowBalanceThreshold ?? defaultThreshold),
    },
    key_limit: { enabled: settings.keyLimitEnabled },
    key_expiry: { enabled: settings.keyExpiryEnabled },
  };
}
