import type { LimitReset } from '../core/usage-window.js';
import { LIMIT_RESETS } from '../core/usage-window.js';
import type { KeyPatch, KeyRecord } from './types.js';
import {
  asBoolean,
  asNullableBigInt,
  asNullableNumber,
  asNullableString,
  asNullableStringArray,
  asNumber,
  asString,
  patchAssignments,
  stringArrayToJson,
  type PatchColumns,
} from './row-values.js';
import type { SqlParam, SqlRow } from './sql-driver.js';

export const KEY_COLUMNS =
  'hash, account_id, name, label, is_management, disabled, limit_amount, limit_reset, include_byok_in_limit, ' +
  'expires_at, created_at, updated_at, creator_user_id, external_user, workspace_id, allowed_models, ' +
  'allowed_providers, compromised_at';

function asLimitReset(value: unknown): LimitReset | null {
  const text = asNullableString(value);
  if (text === null) return null;
  const reset = LIMIT_RESETS.find((candidate) => candidate === text);
  if (reset === undefined) throw new TypeError(`unknown limit_reset "${text}"`);
  return reset;
}

export function keyFromRow(row: SqlRow): KeyRecord {
  return {
    hash: asString(row.hash),
    accountId: asString(row.account_id),
    name: asString(row.name),
    label: asString(row.label),
    isManagement: asBoolean(row.is_management),
    disabled: asBoolean(row.disabled),
    limit: asNullableBigInt(row.limit_amount),
    limitReset: asLimitReset(row.limit_reset),
    includeByokInLimit: asBoolean(row.include_byok_in_limit),
    expiresAt: asNullableNumber(row.expires_at),
    createdAt: asNumber(row.created_at),
    updatedAt: asNullableNumber(row.updated_at),
    creatorUserId: asNullableString(row.creator_user_id),
    externalUser: asNullableString(row.external_user),
    workspaceId: asString(row.workspace_id),
    allowedModels: asNullableStringArray(row.allowed_models),
    allowedProviders: asNullableStringArray(row.allowed_providers),
    compromisedAt: asNullableNumber(row.compromised_at),
  };
}

/** Values in KEY_COLUMNS order. */
export function keyToParams(key: KeyRecord): SqlParam[] {
  return [
    key.hash,
    key.accountId,
    key.name,
    key.label,
    key.isManagement,
    key.disabled,
    key.limit,
    key.limitReset,
    key.includeByokInLimit,
    key.expiresAt,
    key.createdAt,
    key.updatedAt,
    key.creatorUserId,
    key.externalUser,
    key.workspaceId,
    stringArrayToJson(key.allowedModels),
    stringArrayToJson(key.allowedProviders),
    key.compromisedAt,
  ];
}

const PATCH_COLUMNS: PatchColumns<KeyPatch> = {
  name: { column: 'name', toParam: (value: string) => value },
  disabled: { column: 'disabled', toParam: (value: boolean) => value },
  limit: { column: 'limit_amount', toParam: (value: bigint | null) => value },
  limitReset: { column: 'limit_reset', toParam: (value: string | null) => value },
  includeByokInLimit: { column: 'include_byok_in_limit', toParam: (value: boolean) => value },
  expiresAt: { column: 'expires_at', toParam: (value: number | null) => value },
  allowedModels: { column: 'allowed_models', toParam: stringArrayToJson },
  allowedProviders: { column: 'allowed_providers', toParam: stringArrayToJson },
  compromisedAt: { column: 'compromised_at', toParam: (value: number | null) => value },
};

/** `SET` assignments for the fields present in the patch (undefined means "leave as is"). */
export function keyPatchAssignments(patch: KeyPatch): { assignments: string[]; params: SqlParam[] } {
  return patchAssignments(PATCH_COLUMNS, patch);
}
