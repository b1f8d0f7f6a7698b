/**
 * BYOK management (docs/api.md): an account's own provider keys, stored encrypted, never returned.
 * Changes are published on the change bus so every process's credential cache forgets them.
 */
import type { byokSchema } from './response-schemas.js';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { SecretBox } from '../auth/secret-box.js';
import type { ChangeBus } from '../core/change-bus.js';
import { TollgateError } from '../core/errors.js';
import { CREDENTIAL } from '../core/header-values.js';
import type { Catalog } from '../routing/catalog.js';
import type { ByokPatch, ByokRecord, Store } from '../store/types.js';

export interface ByokDeps {
  store: Store;
  bus: ChangeBus;
  catalog: Catalog;
  /** Null when the operator has not configured TOLLGATE_MASTER_KEY: BYOK is then unavailable. */
  box: SecretBox | null;
  now(): number;
}

const hashList = z
  .array(z.string().regex(/^[0-9a-f]{64}$/, 'must be a key hash (64 lowercase hex)'))
  .max(1000)
  .nullable();
const modelList = z.array(z.string().min(1)).max(1000).nullable();

export const createByokSchema = z.strictObject({
  provider: z.string().min(1, 'provider is required'),
  key: z
    .string()
    .trim()
    .min(8, 'key must be the provider API key')
    .max(4096)
    // It travels in a request header: a control character or a space inside would be refused there
    // (and read as the provider's failure), so it is refused here, where the caller can fix it.
    .regex(CREDENTIAL, 'key must be printable ASCII without spaces or control characters'),
  name: z.string().trim().max(200).nullable().optional(),
  disabled: z.boolean().optional(),
  is_fallback: z.boolean().optional(),
  is_required: z.boolean().optional(),
  is_byok_only: z.boolean().optional(),
  sort_order: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  allowed_models: modelList.optional(),
  allowed_api_key_hashes: hashList.optional(),
});

export const updateByokSchema = createByokSchema.omit({ provider: true }).partial();

function requireBox(deps: ByokDeps): SecretBox {
  if (!deps.box)
    throw new TollgateError(
      'feature.disabled',
      'BYOK is disabled on this gateway: the operator must set TOLLGATE_MASTER_KEY',
    );
  return deps.box;
}

/**
 * BYOK only where it means something: the operator opted the provider in (config `byok: true`, which
 * boot refuses without an operator `api_key` or on the demo provider). A provider that checks no key
 * would accept any junk "own key" and the request would be billed only the BYOK fee.
 */
function requireByokProvider(deps: ByokDeps, providerId: string): void {
  const provider = deps.catalog.providers.get(providerId);
  if (provider?.byok) return;
  const why = !provider
    ? 'is no longer configured'
    : provider.apiKey === null
      ? 'does not accept BYOK keys: it checks no key, so an own key could not be told from junk'
      : 'does not accept BYOK keys on this gateway (the operator has not enabled byok for it)';
  throw new TollgateError('request.invalid_body', `Invalid request: provider: "${providerId}" ${why}`, {
    metadata: { provider: providerId },
  });
}

function maskProviderKey(key: string): string {
  return key.length <= 8 ? '****' : `${key.slice(0, 3)}...${key.slice(-4)}`;
}

function checkModels(deps: ByokDeps, models: string[] | null | undefined): void {
  for (const id of models ?? []) {
    if (!deps.catalog.models.has(id))
      throw new TollgateError('request.invalid_body', `Invalid request: allowed_models: ${id} is not a valid model ID`);
  }
}

export async function createByok(
  deps: ByokDeps,
  accountId: string,
  input: z.output<typeof createByokSchema>,
): Promise<ByokRecord> {
  const box = requireBox(deps);
  if (!deps.catalog.providers.has(input.provider)) {
    throw new TollgateError(
      'request.invalid_body',
      `Invalid request: provider: unknown provider "${input.provider}"; see GET /providers`,
    );
  }
  requireByokProvider(deps, input.provider);
  checkModels(deps, input.allowed_models);
  const id = `byok_${randomUUID().replaceAll('-', '')}`;
  const record: ByokRecord = {
    id,
    accountId,
    provider: input.provider,
    name: input.name ?? null,
    label: maskProviderKey(input.key),
    ciphertext: box.encrypt(input.key, id),
    disabled: input.disabled ?? false,
    isFallback: input.is_fallback ?? false,
    isRequired: input.is_required ?? input.is_byok_only ?? false,
    sortOrder: input.sort_order ?? 0,
    allowedModels: input.allowed_models ?? null,
    allowedKeyHashes: input.allowed_api_key_hashes ?? null,
    createdAt: deps.now(),
    updatedAt: null,
  };
  await deps.store.byok.insert(record);
  await deps.bus.publish('byok', accountId);
  return record;
}

/** The account's provider keys (never their secrets). */
export async function listByok(deps: Pick<ByokDeps, 'store'>, accountId: string) {
  const records = await deps.store.byok.list(accountId);
  return records.map(renderByok);
}

export async function ownedByok(deps: ByokDeps, accountId: string, id: string): Promise<ByokRecord> {
  const record = id.length <= 100 ? await deps.store.byok.get(id) : null;
  if (!record || record.accountId !== accountId) throw new TollgateError('resource.not_found', 'BYOK key not found');
  return record;
}

export async function updateByok(
  deps: ByokDeps,
  accountId: string,
  id: string,
  input: z.output<typeof updateByokSchema>,
): Promise<ByokRecord> {
  const existing = await ownedByok(deps, accountId, id);
  requireByokProvider(deps, existing.provider);
  checkModels(deps, input.allowed_models);
  const patch: ByokPatch = {};
  if (input.key !== undefined) {
    patch.ciphertext = requireBox(deps).encrypt(input.key, existing.id);
    patch.label = maskProviderKey(input.key);
  }
  if (input.name !== undefined) patch.name = input.name;
  if (input.disabled !== undefined) patch.disabled = input.disabled;
  if (input.is_fallback !== undefined) patch.isFallback = input.is_fallback;
  const required = input.is_required ?? input.is_byok_only;
  if (required !== undefined) patch.isRequired = required;
  if (input.sort_order !== undefined) patch.sortOrder = input.sort_order;
  if (input.allowed_models !== undefined) patch.allowedModels = input.allowed_models;
  if (input.allowed_api_key_hashes !== undefined) patch.allowedKeyHashes = input.allowed_api_key_hashes;
  const updated = await deps.store.byok.update(id, patch, deps.now());
  if (!updated) throw new TollgateError('resource.not_found', 'BYOK key not found');
  await deps.bus.publish('byok', accountId);
  return updated;
}

export async function deleteByok(deps: ByokDeps, accountId: string, id: string): Promise<void> {
  await ownedByok(deps, accountId, id);
  await deps.store.byok.delete(id, deps.now());
  await deps.bus.publish('byok', accountId);
}

/** Re-encrypts every entry written under an older master key (after a rotation). Returns how many changed. */
export async function rewrapByok(deps: ByokDeps): Promise<number> {
  const box = requireBox(deps);
  let changed = 0;
  for (const record of await deps.store.byok.listAll()) {
    if (!box.isStale(record.ciphertext)) continue;
    const plaintext = box.decrypt(record.ciphertext, record.id);
    await deps.store.byok.update(record.id, { ciphertext: box.encrypt(plaintext, record.id) }, deps.now());
    await deps.bus.publish('byok', record.accountId);
    changed++;
  }
  return changed;
}

/** The `Byok` object of docs/api.md (never the key). */
export function renderByok(r: ByokRecord): z.output<typeof byokSchema> {
  return {
    id: r.id,
    name: r.name,
    label: r.label,
    provider: r.provider,
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: r.updatedAt === null ? null : new Date(r.updatedAt).toISOString(),
    disabled: r.disabled,
    is_byok_only: r.isRequired,
    is_fallback: r.isFallback,
    is_required: r.isRequired,
    sort_order: r.sortOrder,
    allowed_api_key_hashes: r.allowedKeyHashes,
    allowed_models: r.allowedModels,
    allowed_user_ids: null,
    declared_zdr: null,
    workspace_id: null,
  };
}
