/**
 * Password reset by e-mail. Asking always gets the same answer (202, same body) whether or not the
 * address has an account, and the work happens after the answer, so neither text nor timing tells.
 * The token is 32 random bytes, stored only as its SHA-256, valid 30 minutes and once; using it sets
 * the new password, ends every session of the account and voids its other reset links. At most one
 * reset message per account in any 5 minutes (the store looks at the account's last token, in the
 * transaction that would add one), so the form cannot flood a mailbox;
 * and a client address has a budget of requests (`SignInGuard.passwordReset`), so one source cannot
 * mail every holder whose address it knows.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { hashPassword } from '../auth/password.js';
import type { SignInGuard } from '../auth/sign-in-guard.js';
import { TollgateError } from '../core/errors.js';
import type { MailOutbox } from '../mail/mail-outbox.js';
import { passwordResetMail } from '../mail/templates.js';
import type { Logger } from '../observability/logger.js';
import type { Store } from '../store/types.js';
import { passwordSchema } from './sign-in.js';

export const RESET_TOKEN_TTL_MS = 30 * 60_000;
/** At most one reset mail per account in this long (a sliding interval, not a clock window). */
const RESET_MAIL_INTERVAL_MS = 5 * 60_000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface PasswordResetDeps {
  store: Store;
  mail: MailOutbox;
  now(): number;
  log: Logger;
  /** `mail.public_url`: the dashboard the link opens; null: no reset mail can be sent. */
  publicUrl: string | null;
  /** The per-client-address budget of requests (the sign-in limiter's). */
  guard: Pick<SignInGuard, 'passwordReset'>;
}

export const resetRequestSchema = z.strictObject({ email: z.string().max(320) });
/** Any string (the body limit bounds it): one that is not a token of ours gets the invalid-link answer below, in words (not zod's). */
export const resetConfirmSchema = z.strictObject({ token: z.string(), new_password: passwordSchema });

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Refuses a reset request outright when no link can be made (`mail.public_url` unset): the answer is
 * the same for every address, so it tells nothing about accounts — and the holder learns to ask the
 * operator, rather than wait for a mail that never comes ("a link is on its way").
 */
export function assertPasswordResetAvailable(deps: PasswordResetDeps): void {
  if (deps.publicUrl === null)
    throw new TollgateError(
      'feature.disabled',
      'Password reset by e-mail is not set up on this gateway (mail.public_url); ask its operator to set a new password for you',
    );
}

/**
 * Takes the client address's slot of the request budget, or throws 429 (`limits.rate_limited`, with
 * Retry-After). Before anything is looked up, for every request: known and unknown e-mails spend
 * and are answered alike.
 */
export function admitPasswordResetRequest(deps: PasswordResetDeps, clientAddress: string): Promise<void> {
  return deps.guard.passwordReset(clientAddress);
}

/** Queues a reset message when the address has an account; never throws (the caller has answered already). */
export async function requestPasswordReset(deps: PasswordResetDeps, email: string): Promise<void> {
  const normalized = email.trim().toLowerCase();
  try {
    if (normalized === '') return;
    const account = await deps.store.accountAuth.findAccountByEmail(normalized);
    if (!account) return;
    if (deps.publicUrl === null) {
      deps.log.warn(
        { account: account.id },
        'password reset asked, but mail.public_url is not set: no link can be sent',
      );
      return;
    }
    const now = deps.now();
    const token = randomBytes(32).toString('base64url');
    const link = `${deps.publicUrl.replace(/\/+$/, '')}/reset-password?token=${token}`;
    const message = deps.mail.compose(passwordResetMail({ link, minutes: RESET_TOKEN_TTL_MS / 60_000 }), {
      kind: 'password_reset',
      recipient: account.email,
      accountId: account.id,
      dedupeKey: null,
    });
    const created = await deps.store.passwordResets.create(
      { tokenHash: hashToken(token), accountId: account.id, createdAt: now, expiresAt: now + RESET_TOKEN_TTL_MS },
      message,
      RESET_MAIL_INTERVAL_MS,
    );
    if (created) deps.mail.noteQueued([message], 1);
    deps.log.info(
      { account: account.id, sent: created },
      created ? 'password reset mail queued' : 'password reset asked again within 5 minutes: no new mail',
    );
  } catch (error) {
    deps.log.error({ err: error }, 'password reset request failed');
  }
}

export const resetCheckSchema = z.strictObject({ token: z.string() });

/**
 * Whether a reset link can still be used (`POST /password-reset/check`): the page says at once that a
 * used or expired link is, instead of taking a new password twice to refuse it. It tells nothing a
 * confirm would not (the token is 32 random bytes: nobody holds one they were not mailed).
 */
export async function passwordResetTokenValid(
  deps: PasswordResetDeps,
  input: z.output<typeof resetCheckSchema>,
): Promise<boolean> {
  if (!TOKEN_PATTERN.test(input.token)) return false;
  return deps.store.passwordResets.isRedeemable(hashToken(input.token), deps.now());
}

export async function confirmPasswordReset(
  deps: PasswordResetDeps,
  input: z.output<typeof resetConfirmSchema>,
): Promise<void> {
  const invalid = () =>
    new TollgateError(
      'request.invalid_body',
      'This password reset link is invalid, was already used or has expired; ask for a new one',
    );
  if (!TOKEN_PATTERN.test(input.token)) throw invalid();
  const tokenHash = hashToken(input.token);
  // A made-up token must not cost a password hash (scrypt: ~32 MiB and the thread pool, no credentials
  // needed to ask): it is looked up first; `redeem` checks it again, atomically, with the new hash.
  if (!(await deps.store.passwordResets.isRedeemable(tokenHash, deps.now()))) throw invalid();
  const passwordHash = await hashPassword(input.new_password);
  const accountId = await deps.store.passwordResets.redeem(tokenHash, deps.now(), passwordHash);
  if (accountId === null) throw invalid();
  deps.log.info({ account: accountId }, 'password reset: new password set, every session ended');
}
