import type { ByokPatch, ByokRecord } from './types.js';
import {
  asBoolean,
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

export const BYOK_COLUMNS =
  'id, account_id, provider, name, label, ciphertext, disabled, is_fallback, is_required, sort_order, allowed_models, ' +
  'allowed_api_key_hashes, created_at, updated_at';

export function byokFromRow(row: SqlRow): ByokRecord {
  return {
    id: asString(row.id),
    accountId: asString(row.account_id),
    provider: asString(row.provider),
    name: asNullableString(row.name),
    label: asString(row.label),
    ciphertext: asString(row.ciphertext),
    disabled: asBoolean(row.disabled),
    isFallback: asBoolean(row.is_fallback),
    isRequired: asBoolean(row.is_required),
    sortOrder: asNumber(row.sort_order),
    allowedModels: asNullableStringArray(row.allowed_models),
    allowedKeyHashes: asNullableStringArray(row.allowed_api_key_hashes),
    createdAt: asNumber(row.created_at),
    updatedAt: asNullableNumber(row.updated_at),
  };
}

/** Values in BYOK_COLUMNS order. */
export function byokToParams(r: ByokRecord): SqlParam[] {
  return [
    r.id,
    r.accountId,
    r.provider,
    r.name,
    r.label,
    r.ciphertext,
    r.disabled,
    r.isFallback,
    r.isRequired,
    r.sortOrder,
    stringArrayToJson(r.allowedModels),
    stringArrayToJson(r.allowedKeyHashes),
    r.createdAt,
    r.updatedAt,
  ];
}

const PATCH_COLUMNS: PatchColumns<ByokPatch> = {
  name: { column: 'name', toParam: (v: string | null) => v },
  disabled: { column: 'disabled', toParam: (v: boolean) => v },
  isFallback: { column: 'is_fallback', toParam: (v: boolean) => v },
  isRequired: { column: 'is_required', toParam: (v: boolean) => v },
  sortOrder: { column: 'sort_order', toParam: (v: number) => v },
  allowedModels: { column: 'allowed_models', toParam: stringArrayToJson },
  allowedKeyHashes: { column: 'allowed_api_key_hashes', toParam: stringArrayToJson },
  ciphertext: { column: 'ciphertext', toParam: (v: string) => v },
  label: { column: 'label', toParam: (v: string) => v },
};

export function byokPatchAssignments(patch: ByokPatch): { assignments: string[]; params: SqlParam[] } {
  return patchAssignments(PATCH_COLUMNS, patch);
}
