/**
 * The account holder's own authentication use cases: sign in, sign up (when open), change password.
 * The same answer — text and, as far as we can make it, time — for an unknown e-mail and a wrong
 * password, so the sign-in form does not reveal which e-mails have accounts.
 */
import { z } from 'zod';
import {
  burnPasswordCheck,
  hashPassword,
  needsRehash,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  verifyPassword,
} from '../auth/password.js';
import type { ActiveSession, SessionService } from '../auth/sessions.js';
import { FAMILIAR_ADDRESS_MS, familiarAddressTag, type SignInGuard } from '../auth/sign-in-guard.js';
import { TollgateError } from '../core/errors.js';
import { newAccountId } from '../core/ids.js';
import type { AccountAuthStore } from '../store/account-auth-store.js';
import type { AccountRecord, Store } from '../store/types.js';

export interface SignInDeps {
  store: Store;
  sessions: SessionService;
  guard: SignInGuard;
  signup: 'closed' | 'open';
  now(): number;
}

export const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `password must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .max(PASSWORD_MAX_LENGTH, `password must be at most ${PASSWORD_MAX_LENGTH} characters`);

/**
 * An account's e-mail address: valid, and within SMTP's limits (RFC 5321 §4.5.3.1: 64 octets before
 * the @, 254 in all) — longer ones cannot be delivered to, so the account could never get a reset link.
 */
export const accountEmailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(254, 'email must be at most 254 characters')
  .pipe(z.email('email must be a valid e-mail address'))
  .refine(
    (email) => Buffer.byteLength(email.slice(0, email.lastIndexOf('@'))) <= 64,
    'email must have at most 64 characters before the @',
  );

const emailSchema = accountEmailSchema;

export const credentialsSchema = z.strictObject({
  email: z.string().max(320),
  // Not the policy here: a sign-in with a too-short password is simply wrong, with the usual answer.
  password: z.string().max(PASSWORD_MAX_LENGTH * 4),
});

export const signUpSchema = z.strictObject({ email: emailSchema, password: passwordSchema });

export const changePasswordSchema = z.strictObject({
  current_password: z.string().max(PASSWORD_MAX_LENGTH * 4),
  new_password: passwordSchema,
});

export interface SignedIn {
  account: AccountRecord;
  token: string;
  active: ActiveSession;
}

const INVALID = 'Invalid e-mail or password';
/** Never an account id (ids are `acct_…`): what an unknown e-mail's familiarity is looked up as. */
const NO_ACCOUNT = 'no-account';

export async function signIn(
  deps: SignInDeps,
  input: z.output<typeof credentialsSchema>,
  clientAddress: string,
): Promise<SignedIn> {
  const email = input.email.trim().toLowerCase();
  const accountAuth = deps.store.accountAuth;
  // Asked only once the account-wide budget is spent: has the account signed in from here lately?
  // The same two look-ups whether or not the e-mail has an account (no account id matches the
  // placeholder): the 429 must not take longer for e-mails that exist.
  const familiar = async (subject: string) => {
    const known = await accountAuth.findAccountByEmail(email);
    const seenHere = await signedInFrom(deps, known?.id ?? NO_ACCOUNT, subject);
    return known !== null && seenHere;
  };
  const account = email === '' ? null : await accountAuth.findAccountByEmail(email);
  const attempt = await deps.guard.begin(email, clientAddress, familiar, account?.passwordHash ?? null);
  const ok = account?.passwordHash
    ? await verifyPassword(input.password, account.passwordHash)
    : await burnPasswordCheck(input.password);
  if (!account?.passwordHash || !ok) throw new TollgateError('auth.invalid_credentials', INVALID);
  await attempt.succeeded();
  await accountAuth.rememberSignInAddress(
    account.id,
    familiarAddressTag(account.id, attempt.addressSubject),
    deps.now(),
  );
  let checked = account.passwordHash;
  if (needsRehash(checked)) {
    const rehashed = await hashPassword(input.password);
    // Only over the hash just checked: a password set meanwhile stays (and this sign-in then fails).
    if (await accountAuth.rehashPassword(account.id, checked, rehashed)) checked = rehashed;
    else {
      // Or a concurrent sign-in upgraded the same password first: its hash holds this password too.
      const current = (await accountAuth.findAccountByEmail(email))?.passwordHash;
      if (current && current !== checked && (await verifyPassword(input.password, current))) checked = current;
    }
  }
  const { token, active } = await deps.sessions.create(account.id, checked);
  return { account, token, active };
}

/** Whether the account signed in from that address (its subject) within FAMILIAR_ADDRESS_MS. */
function signedInFrom(deps: SignInDeps, accountId: string, subject: string): Promise<boolean> {
  return deps.store.accountAuth.signedInFrom(
    accountId,
    familiarAddressTag(accountId, subject),
    deps.now() - FAMILIAR_ADDRESS_MS,
  );
}

export function assertSignUpOpen(deps: Pick<SignInDeps, 'signup'>): void {
  if (deps.signup !== 'open')
    throw new TollgateError('feature.disabled', 'Sign-up is closed on this gateway: ask its operator for an account');
}

export async function signUp(
  deps: SignInDeps,
  input: z.output<typeof signUpSchema>,
  clientAddress: string,
): Promise<SignedIn> {
  assertSignUpOpen(deps);
  await deps.guard.signUp(clientAddress);
  const passwordHash = await hashPassword(input.password);
  const account = await deps.store.createAccount({
    id: newAccountId(),
    email: input.email,
    passwordHash,
    createdAt: deps.now(),
  });
  const { token, active } = await deps.sessions.create(account.id, passwordHash);
  return { account, token, active };
}

/** Checks the current password, sets the new one and ends every other session of the account. */
export async function changePassword(
  deps: SignInDeps,
  accountId: string,
  sessionId: string | undefined,
  input: z.output<typeof changePasswordSchema>,
  clientAddress: string,
): Promise<void> {
  const account = await deps.store.getAccount(accountId);
  if (!account) throw new TollgateError('auth.no_session', 'Not signed in, or the session has expired');
  // The same brute-force budget as sign-in: a stolen session must not become a password oracle. And
  // the same exception: guessing from elsewhere does not stop the holder, at a familiar address,
  // from changing the password — the one thing to do about it.
  const attempt = await deps.guard.begin(
    account.email,
    clientAddress,
    (subject) => signedInFrom(deps, account.id, subject),
    account.passwordHash,
  );
  const ok = account.passwordHash
    ? await verifyPassword(input.current_password, account.passwordHash)
    : await burnPasswordCheck(input.current_password);
  // 400, not 401: the session is fine, and a dashboard treats 401 as "signed out".
  if (!ok) throw new TollgateError('request.invalid_body', 'The current password is not correct');
  await attempt.succeeded();
  await setAccountPassword(deps.store.accountAuth, accountId, input.new_password, deps.now());
  await deps.sessions.revokeAll(accountId, sessionId);
}

/**
 * For the operator (admin API, CLI) and the holder: hashes and stores, voiding reset links sent
 * before; `resource.not_found` for an unknown account.
 */
export async function setAccountPassword(
  store: AccountAuthStore,
  accountId: string,
  password: string,
  now: number,
): Promise<void> {
  const updated = await store.setPassword(accountId, await hashPassword(password), now);
  if (!updated) throw new TollgateError('resource.not_found', `Account ${accountId.slice(0, 100)} not found`);
}
