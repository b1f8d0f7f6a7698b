/**
 * Key management use cases (docs/api.md, §3.2, admin §6): create (plaintext shown once), list, get,
 * update, delete, key info. Every change is published on the change bus so that every process's
 * authentication cache forgets the key at once.
 */
import type { apiKeySchema, keyInfoSchema } from './response-schemas.js';
import { z } from 'zod';
import { TollgateError } from '../core/errors.js';
import { parseUtcDateTime } from '../core/utc-date-time.js';
import type { ChangeBus } from '../core/change-bus.js';
import { unitsToUsd, usdToUnits, type Units } from '../core/money.js';
import { generateKey, hashKey, maskKey } from '../auth/key-format.js';
import { limitRemaining, ZERO_USAGE } from '../billing/key-view.js';
import { LIMIT_RESETS, usagePeriods } from '../core/usage-window.js';
import type { Catalog } from '../routing/catalog.js';
import type { OAuthApp } from '../store/account-auth-store.js';
import type { KeyPatch, KeyRecord, KeyUsage, Store } from '../store/types.js';

export interface KeyServiceDeps {
  store: Store;
  bus: ChangeBus;
  now(): number;
  /** When given, guardrail lists (`allowed_models`, `allowed_providers`) must name ids it knows. */
  catalog?: Pick<Catalog, 'models' | 'providers'>;
}

const limitSchema = z
  .number()
  .nonnegative('limit must be >= 0')
  .max(1e9, 'limit is too large')
  .refine((v) => {
    try {
      usdToUnits(v);
      return true;
    } catch {
      return false;
    }
  }, 'limit has more than 9 decimal places');

/** docs/api.md: `expires_at` is ISO-8601 UTC; a calendar-valid date-time ending in Z, nothing else. */
export const expiresAtSchema = z.string().superRefine((text, ctx) => {
  const parsed = parseUtcDateTime(text);
  if (!parsed.ok) ctx.addIssue({ code: 'custom', message: `expires_at ${parsed.reason}` });
});

const slugList = z.array(z.string().min(1)).max(1000);

export const createKeySchema = z.strictObject({
  name: z.string().trim().min(1, 'name must be a non-empty string').max(200),
  limit: limitSchema.nullable().optional(),
  limit_reset: z
    .enum(LIMIT_RESETS as [string, ...string[]])
    .nullable()
    .optional(),
  include_byok_in_limit: z.boolean().optional(),
  expires_at: expiresAtSchema.nullable().optional(),
  allowed_models: slugList.nullable().optional(),
  allowed_providers: slugList.nullable().optional(),
  // Sent by @openrouter/sdk when its caller sets them. One workspace, and keys are the account's own.
  workspace_id: z
    .literal('default', { error: 'workspace_id: this gateway has one workspace, "default"' })
    .nullable()
    .optional(),
  creator_user_id: z.string().max(200).nullable().optional(),
});

export const adminCreateKeySchema = createKeySchema.extend({ management: z.boolean().optional() });

export const updateKeySchema = z.strictObject({
  name: z.string().trim().min(1, 'name must be a non-empty string').max(200).optional(),
  disabled: z.boolean().optional(),
  limit: limitSchema.nullable().optional(),
  limit_reset: z
    .enum(LIMIT_RESETS as [string, ...string[]])
    .nullable()
    .optional(),
  include_byok_in_limit: z.boolean().optional(),
  allowed_models: slugList.nullable().optional(),
  allowed_providers: slugList.nullable().optional(),
});

export type CreateKeyInput = z.output<typeof createKeySchema>;
export type UpdateKeyInput = z.output<typeof updateKeySchema>;

/**
 * A key's guardrail list as given (`undefined`: not given), checked: every id must exist in the catalog
 * (a typo would otherwise silently block the key) → 400 naming the unknown ids; an empty list → 400
 * (`null` removes the restriction); duplicates are dropped. Ids are exact: `x/y` does not allow `x/y:free`.
 */
function guardrailList(
  deps: KeyServiceDeps,
  field: 'allowed_models' | 'allowed_providers',
  list: string[] | null | undefined,
): string[] | null | undefined {
  if (list === undefined || list === null) return list;
  if (list.length === 0)
    throw new TollgateError(
      'request.invalid_body',
      `${field} must list at least one id; use null to remove the restriction`,
    );
  const known = field === 'allowed_models' ? deps.catalog?.models : deps.catalog?.providers;
  const unknown = known ? [...new Set(list.filter((id) => !known.has(id)))] : [];
  if (unknown.length > 0) {
    const names = unknown.map((id) => `"${id}"`).join(', ');
    const what =
      field === 'allowed_models'
        ? unknown.length === 1
          ? 'is not a valid model ID'
          : 'are not valid model IDs'
        : unknown.length === 1
          ? 'is not a known provider'
          : 'are not known providers';
    throw new TollgateError('request.invalid_body', `${field}: ${names} ${what}`, { metadata: { field, unknown } });
  }
  return [...new Set(list)];
}

function toUnits(limit: number | null | undefined): Units | null {
  return limit === null || limit === undefined ? null : usdToUnits(limit);
}

export async function createKey(
  deps: KeyServiceDeps,
  accountId: string,
  input: CreateKeyInput,
  options: { management: boolean },
): Promise<{ key: KeyRecord; plaintext: string }> {
  const account = await deps.store.getAccount(accountId);
  if (!account) throw new TollgateError('resource.not_found', `Account ${accountId} not found`);
  const now = deps.now();
  const parsedExpiry = input.expires_at ? parseUtcDateTime(input.expires_at) : null;
  const expiresAt = parsedExpiry?.ok ? parsedExpiry.epochMs : null;
  if (expiresAt !== null && expiresAt <= now)
    throw new TollgateError('request.invalid_body', 'expires_at must be in the future');
  if (typeof input.creator_user_id === 'string' && input.creator_user_id !== accountId)
    throw new TollgateError(
      'request.invalid_body',
      "creator_user_id: a key's creator is the account that owns it (its id, or leave it out)",
    );
  const allowedModels = guardrailList(deps, 'allowed_models', input.allowed_models) ?? null;
  const allowedProviders = guardrailList(deps, 'allowed_providers', input.allowed_providers) ?? null;
  const plaintext = generateKey();
  const key: KeyRecord = {
    hash: hashKey(plaintext),
    accountId,
    name: input.name,
    label: maskKey(plaintext),
    isManagement: options.management,
    disabled: false,
    limit: toUnits(input.limit),
    limitReset: (input.limit_reset ?? null) as KeyRecord['limitReset'],
    includeByokInLimit: input.include_byok_in_limit ?? false,
    expiresAt,
    createdAt: now,
    updatedAt: null,
    creatorUserId: accountId,
    externalUser: null,
    workspaceId: 'default',
    allowedModels,
    allowedProviders,
    compromisedAt: null,
  };
  await deps.store.insertKey(key);
  return { key, plaintext };
}

/** Any account's key, for the operator; 404 when there is none. */
export async function keyByHash(deps: Pick<KeyServiceDeps, 'store'>, hash: string): Promise<KeyRecord> {
  const key = /^[0-9a-f]{64}$/.test(hash) ? await deps.store.getKey(hash) : null;
  if (!key) throw new TollgateError('resource.not_found', 'Key not found');
  return key;
}

/** One page of an account's keys, newest first. */
export function listKeys(
  deps: Pick<KeyServiceDeps, 'store'>,
  accountId: string,
  page: { offset: number; limit: number; includeDisabled: boolean },
): Promise<KeyRecord[]> {
  return deps.store.listKeys(accountId, page);
}

/** The OAuth app each key was issued to (keys made by hand have none). */
export async function appsOfKeys(
  deps: Pick<KeyServiceDeps, 'store'>,
  keys: readonly KeyRecord[],
): Promise<Map<string, OAuthApp>> {
  return keys.length === 0 ? new Map() : deps.store.accountAuth.appsOfKeys(keys.map((k) => k.hash));
}

/** A key of the given account, or 404 (another account's key is indistinguishable from a missing one). */
export async function ownedKey(deps: KeyServiceDeps, accountId: string, hash: string): Promise<KeyRecord> {
  const key = /^[0-9a-f]{64}$/.test(hash) ? await deps.store.getKey(hash) : null;
  if (!key || key.accountId !== accountId) throw new TollgateError('resource.not_found', 'Key not found');
  return key;
}

export async function updateKey(
  deps: KeyServiceDeps,
  accountId: string,
  hash: string,
  input: UpdateKeyInput,
): Promise<KeyRecord> {
  const existing = await ownedKey(deps, accountId, hash);
  if (input.disabled === false && existing.compromisedAt !== null) {
    throw new TollgateError(
      'resource.conflict',
      'This key was reported compromised and cannot be re-enabled; create a new key',
    );
  }
  const patch: KeyPatch = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.disabled !== undefined) patch.disabled = input.disabled;
  if (input.limit !== undefined) patch.limit = toUnits(input.limit);
  if (input.limit_reset !== undefined) patch.limitReset = input.limit_reset as KeyRecord['limitReset'];
  if (input.include_byok_in_limit !== undefined) patch.includeByokInLimit = input.include_byok_in_limit;
  if (input.allowed_models !== undefined)
    patch.allowedModels = guardrailList(deps, 'allowed_models', input.allowed_models) ?? null;
  if (input.allowed_providers !== undefined)
    patch.allowedProviders = guardrailList(deps, 'allowed_providers', input.allowed_providers) ?? null;
  const updated = await deps.store.updateKey(hash, patch, deps.now());
  if (!updated) throw new TollgateError('resource.not_found', 'Key not found');
  await deps.bus.publish('key', hash);
  return updated;
}

export async function deleteKey(deps: KeyServiceDeps, accountId: string, hash: string): Promise<void> {
  await ownedKey(deps, accountId, hash);
  await deps.store.deleteKey(hash, deps.now());
  await deps.bus.publish('key', hash);
}

/** `ApiKey` plus `app` (the OAuth app a key was issued to, or null) and `compromised` (disabled for good). */
export async function renderOwnedKeys(deps: KeyServiceDeps, keys: readonly KeyRecord[], usage: Map<string, KeyUsage>) {
  const apps = await appsOfKeys(deps, keys);
  return keys.map((k) => ({
    ...renderApiKey(k, usage.get(k.hash)),
    app: apps.get(k.hash) ?? null,
    compromised: k.compromisedAt !== null,
  }));
}

export async function usageOf(deps: KeyServiceDeps, keys: readonly KeyRecord[]): Promise<Map<string, KeyUsage>> {
  if (keys.length === 0) return new Map();
  return deps.store.getKeyUsage(
    keys.map((k) => k.hash),
    usagePeriods(deps.now()),
  );
}

function usageFields(usage: KeyUsage) {
  return {
    usage: unitsToUsd(usage.all.usage),
    usage_daily: unitsToUsd(usage.day.usage),
    usage_weekly: unitsToUsd(usage.week.usage),
    usage_monthly: unitsToUsd(usage.month.usage),
    byok_usage: unitsToUsd(usage.all.byokUsage),
    byok_usage_daily: unitsToUsd(usage.day.byokUsage),
    byok_usage_weekly: unitsToUsd(usage.week.byokUsage),
    byok_usage_monthly: unitsToUsd(usage.month.byokUsage),
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function limitFields(key: KeyRecord, usage: KeyUsage) {
  const remaining = limitRemaining(key, usage);
  return {
    limit: key.limit === null ? null : unitsToUsd(key.limit),
    limit_remaining: remaining === null ? null : unitsToUsd(remaining),
    limit_reset: key.limitReset,
    include_byok_in_limit: key.includeByokInLimit,
  };
}

/** The `ApiKey` object of docs/api.md */
export function renderApiKey(key: KeyRecord, usage: KeyUsage = ZERO_USAGE): z.output<typeof apiKeySchema> {
  return {
    hash: key.hash,
    name: key.name,
    label: key.label,
    disabled: key.disabled,
    ...limitFields(key, usage),
    ...usageFields(usage),
    created_at: iso(key.createdAt),
    updated_at: iso(key.updatedAt),
    expires_at: iso(key.expiresAt),
    creator_user_id: key.creatorUserId,
    external_user: key.externalUser,
    workspace_id: key.workspaceId,
    is_management_key: key.isManagement,
    allowed_models: key.allowedModels,
    allowed_providers: key.allowedProviders,
  };
}

export interface FreeModelDaily {
  limit: number;
  used: number;
  remaining: number;
}

/** `GET /key` (docs/api.md). */
export function renderKeyInfo(
  key: KeyRecord,
  usage: KeyUsage,
  isFreeTier: boolean,
  freeDaily: FreeModelDaily,
): z.output<typeof keyInfoSchema> {
  return {
    label: key.label,
    ...limitFields(key, usage),
    ...usageFields(usage),
    is_free_tier: isFreeTier,
    is_management_key: key.isManagement,
    is_provisioning_key: key.isManagement,
    free_model_daily_requests: freeDaily,
    rate_limit: { requests: -1, interval: '10s', note: 'This field is deprecated and safe to ignore.' },
    creator_user_id: key.creatorUserId,
    organization_id: null,
    workspace_id: key.workspaceId,
    allowed_data_regions: ['global'],
    expires_at: iso(key.expiresAt),
  };
}
