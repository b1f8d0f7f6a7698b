/**
 * Demo mode, first start only: one account with demo credits, a generated dashboard password and one
 * inference key, printed once. "First start" = the store has no account yet, so a restart never mints
 * another key or password.
 */
import type { ChangeBus } from '../core/change-bus.js';
import { generatePassword } from '../auth/password.js';
import { TollgateError } from '../core/errors.js';
import { addCredits, createAccount } from './accounts.js';
import { createKey } from './key-management.js';
import type { Store } from '../store/types.js';

export const DEMO_EMAIL = 'demo@tollgate.local';
export const DEMO_CREDITS_USD = 10;

export interface DemoAccount {
  key: string;
  accountId: string;
  email: string;
  /** For the dashboard's sign-in; shown once, stored only as its scrypt hash. */
  password: string;
}

export async function ensureDemoAccount(deps: {
  store: Store;
  bus: ChangeBus;
  now(): number;
}): Promise<DemoAccount | null> {
  if ((await deps.store.countAccounts()) > 0) return null;
  const password = generatePassword();
  let accountId: string;
  try {
    accountId = (await createAccount(deps, { email: DEMO_EMAIL, password })).id;
  } catch (error) {
    // Another process starting at the same moment created it first.
    if (error instanceof TollgateError && error.code === 'resource.conflict') return null;
    throw error;
  }
  await addCredits(deps, accountId, { amount: DEMO_CREDITS_USD, kind: 'grant', reference: 'demo-initial-grant' });
  const { plaintext } = await createKey(deps, accountId, { name: 'demo key' }, { management: false });
  return { key: plaintext, accountId, email: DEMO_EMAIL, password };
}
