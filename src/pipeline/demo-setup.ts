/**
 * Demo mode, first start only: one account with demo credits and one inference key, printed once.
 * "First start" = the store has no account yet, so a restart never mints another key.
 */
import type { ChangeBus } from '../core/change-bus.js';
import { TollgateError } from '../core/errors.js';
import { addCredits, createAccount } from './accounts.js';
import { createKey } from './key-management.js';
import type { Store } from '../store/types.js';

export const DEMO_EMAIL = 'demo@tollgate.local';
export const DEMO_CREDITS_USD = 10;

export async function ensureDemoAccount(deps: { store: Store; bus: ChangeBus; now(): number }): Promise<{ key: string; accountId: string } | null> {
  if ((await deps.store.countAccounts()) > 0) return null;
  let accountId: string;
  try {
    accountId = (await createAccount(deps, { email: DEMO_EMAIL })).id;
  } catch (error) {
    // Another process starting at the same moment created it first.
    if (error instanceof TollgateError && error.code === 'resource.conflict') return null;
    throw error;
  }
  await addCredits(deps, accountId, { amount: DEMO_CREDITS_USD, kind: 'grant', reference: 'demo-initial-grant' });
  const { plaintext } = await createKey(deps, accountId, { name: 'demo key' }, { management: false });
  return { key: plaintext, accountId };
}
