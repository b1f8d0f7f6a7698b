/** The OAuth apps an account holder approved (`GET /apps`, `DELETE /apps/{id}`, docs/api.md). */
import type { z } from 'zod';
import type { appGrantSchema } from './response-schemas.js';
import { TollgateError } from '../core/errors.js';
import { unitsToUsd } from '../core/money.js';
import type { OAuthGrant } from '../store/account-auth-store.js';
import { deleteKey, type KeyServiceDeps } from './key-management.js';

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function renderGrant(grant: OAuthGrant): z.output<typeof appGrantSchema> {
  return {
    id: grant.id,
    app: { id: grant.app.id, name: grant.app.name, origin: grant.app.origin },
    key_hash: grant.key.hash,
    key_label: grant.key.label,
    key_name: grant.key.name,
    limit: grant.key.limit === null ? null : unitsToUsd(grant.key.limit),
    limit_reset: grant.key.limitReset,
    created_at: iso(grant.createdAt),
    expires_at: iso(grant.key.expiresAt),
    disabled: grant.key.disabled,
  };
}

export async function listAppGrants(deps: Pick<KeyServiceDeps, 'store'>, accountId: string) {
  const grants = await deps.store.accountAuth.listGrants(accountId);
  return grants.map(renderGrant);
}

/** Revoking an app deletes the key it was given; another account's grant is indistinguishable from a missing one. */
export async function revokeAppGrant(deps: KeyServiceDeps, accountId: string, id: string): Promise<void> {
  const grant = id.length <= 100 ? await deps.store.accountAuth.getGrant(id) : null;
  if (!grant || grant.accountId !== accountId) throw new TollgateError('resource.not_found', 'Authorization not found');
  await deleteKey(deps, accountId, grant.key.hash);
}
