/**
 * What the dashboard reads about the account itself, with the session cookie or a management key:
 * `GET /account`, and the OAuth authorizations (`GET /apps`, `DELETE /apps/{id}` revokes the key).
 */
import { TollgateError } from '../../core/errors.js';
import { unitsToUsd } from '../../core/money.js';
import { renderAccount } from '../../pipeline/accounts.js';
import { deleteKey } from '../../pipeline/key-management.js';
import type { OAuthGrant } from '../../store/account-auth-store.js';
import { authenticateAccount } from '../account-auth.js';
import type { RouteTable } from '../route-table.js';
import type { Services } from '../services.js';

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function renderGrant(grant: OAuthGrant) {
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

export function registerAccountHolderRoutes(routes: RouteTable, services: Services): void {
  routes.add(
    'GET',
    '/api/v1/account',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      const [account, granted] = await Promise.all([
        services.store.getAccount(caller.accountId),
        services.store.accountAuth.totalGranted(caller.accountId),
      ]);
      if (!account) throw new TollgateError('resource.not_found', 'Account not found');
      return { data: { ...renderAccount(account), total_granted: unitsToUsd(granted) } };
    },
    { auth: 'account' },
  );

  routes.add(
    'GET',
    '/api/v1/apps',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      const grants = await services.store.accountAuth.listGrants(caller.accountId);
      return { data: grants.map(renderGrant) };
    },
    { auth: 'account' },
  );

  routes.add(
    'DELETE',
    '/api/v1/apps/:id',
    async (request, reply) => {
      const caller = await authenticateAccount(services, request, reply);
      const id = (request.params as { id: string }).id;
      const grant = id.length <= 100 ? await services.store.accountAuth.getGrant(id) : null;
      // Another account's authorization is indistinguishable from a missing one.
      if (!grant || grant.accountId !== caller.accountId)
        throw new TollgateError('resource.not_found', 'Authorization not found');
      await deleteKey(services.keys, caller.accountId, grant.key.hash);
      return { deleted: true };
    },
    { auth: 'account' },
  );
}
