/** Account use cases for the operator: create, read, add credits. */
import type { accountOverviewSchema, accountSchema } from './response-schemas.js';
import { z } from 'zod';
import { hashPassword } from '../auth/password.js';
import { TollgateError } from '../core/errors.js';
import type { ChangeBus } from '../core/change-bus.js';
import { newAccountId, newEntryId } from '../core/ids.js';
import { unitsToUsd, usdToUnits } from '../core/money.js';
import type { AccountRecord, CreditKind, Store } from '../store/types.js';
import { CREDIT_KINDS } from '../store/types.js';
import type { FreeModelDaily } from './key-management.js';
import { accountEmailSchema, passwordSchema } from './sign-in.js';

export interface AccountDeps {
  store: Store;
  bus: ChangeBus;
  now(): number;
}

export const createAccountSchema = z.strictObject({
  email: accountEmailSchema,
  password: passwordSchema.optional(),
});

export const addCreditsSchema = z.strictObject({
  amount: z
    .number()
    .refine((n) => n !== 0, 'amount must be non-zero')
    .refine((n) => Math.abs(n) <= 1e9, 'amount is too large'),
  kind: z.enum(CREDIT_KINDS as [CreditKind, ...CreditKind[]]),
  reference: z.string().min(1).max(200).optional(),
});

export async function createAccount(
  deps: AccountDeps,
  input: z.output<typeof createAccountSchema>,
): Promise<AccountRecord> {
  return deps.store.createAccount({
    id: newAccountId(),
    email: input.email,
    passwordHash: input.password ? await hashPassword(input.password) : null,
    createdAt: deps.now(),
  });
}

export async function getAccount(deps: AccountDeps, id: string): Promise<AccountRecord> {
  const missing = () => new TollgateError('resource.not_found', `Account ${id.slice(0, 100)} not found`);
  if (id.length > 100) throw missing();
  return accountOr(deps, id, missing);
}

export async function addCredits(
  deps: AccountDeps,
  accountId: string,
  input: z.output<typeof addCreditsSchema>,
): Promise<{ account: AccountRecord; applied: boolean }> {
  let amount: bigint;
  try {
    amount = usdToUnits(input.amount);
  } catch (error) {
    throw new TollgateError('request.invalid_body', `Invalid request: amount: ${(error as Error).message}`);
  }
  if (amount < 0n && input.kind !== 'adjustment')
    throw new TollgateError('request.invalid_body', 'Invalid request: amount: only an adjustment may be negative');
  const result = await deps.store.addCredits({
    id: newEntryId(),
    accountId,
    kind: input.kind,
    amount,
    reference: input.reference ?? null,
    createdAt: deps.now(),
  });
  await deps.bus.publish('account', accountId);
  return result;
}

export function renderAccount(account: AccountRecord): z.output<typeof accountSchema> {
  return {
    id: account.id,
    email: account.email,
    created_at: new Date(account.createdAt).toISOString(),
    total_credits: unitsToUsd(account.totalCredits),
    total_purchased: unitsToUsd(account.totalPurchased),
    total_usage: unitsToUsd(account.totalUsage),
    balance: unitsToUsd(account.totalCredits - account.totalUsage),
    is_free_tier: account.totalPurchased === 0n,
  };
}

/** The account a key belongs to; a key whose account is gone is an invalid key. */
export function accountOfCaller(deps: Pick<AccountDeps, 'store'>, accountId: string): Promise<AccountRecord> {
  return accountOr(deps, accountId, () => new TollgateError('auth.invalid_key', 'Invalid API key'));
}

/**
 * GET /account: the account, the credit granted to its OAuth apps, and today's free-model requests
 * (`freeDaily`: null on a gateway without a free model, where there is nothing to count; it answers
 * null when the counters cannot be read).
 */
export async function accountOverview(
  deps: Pick<AccountDeps, 'store'>,
  accountId: string,
  freeDaily: ((account: AccountRecord) => Promise<FreeModelDaily | null>) | null,
): Promise<z.output<typeof accountOverviewSchema>> {
  const [account, granted] = await Promise.all([
    deps.store.getAccount(accountId),
    deps.store.accountAuth.totalGranted(accountId),
  ]);
  if (!account) throw new TollgateError('resource.not_found', 'Account not found');
  return {
    ...renderAccount(account),
    total_granted: unitsToUsd(granted),
    free_model_daily_requests: freeDaily ? await freeDaily(account) : null,
  };
}

/** The account of a live session; one deleted meanwhile ends the session. */
export function sessionAccount(deps: Pick<AccountDeps, 'store'>, accountId: string): Promise<AccountRecord> {
  return accountOr(
    deps,
    accountId,
    () => new TollgateError('auth.no_session', 'Not signed in, or the session has expired'),
  );
}

/** The account, or the caller's error when there is none. */
async function accountOr(
  deps: Pick<AccountDeps, 'store'>,
  accountId: string,
  missing: () => TollgateError,
): Promise<AccountRecord> {
  const account = await deps.store.getAccount(accountId);
  if (!account) throw missing();
  return account;
}
