/**
 * OAuth PKCE (docs/api.md): an account holder (approval page, or a key of the account through
 * `POST /auth/keys/code`) asks for a code for an app named by its callback's origin; the app exchanges
 * the code and its PKCE verifier for an inference key of the holder's account, carrying the app, an
 * optional limit and an optional expiry. Codes are random, stored hashed, single-use (an atomic
 * conditional update) and expire after 10 minutes.
 */
import type { authorizationPreviewSchema } from './response-schemas.js';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { appOriginOf, callbackWith, checkCallbackUrl } from '../auth/callback-url.js';
import { generateKey, hashKey, maskKey } from '../auth/key-format.js';
import { CODE_TTL_MS, hashAuthorizationCode, newAuthorizationCode, PKCE_VALUE, verifierMatches } from '../auth/pkce.js';
import { LIMIT_RESETS, type LimitReset } from '../core/usage-window.js';
import { TollgateError } from '../core/errors.js';
import { displayText } from '../core/display-text.js';
import { deleteKey, expiresAtSchema } from './key-management.js';
import { unitsToUsd, usdToUnits, type Units } from '../core/money.js';
import type { CodeChallengeMethod } from '../store/account-auth-store.js';
import type { KeyRecord, Store } from '../store/types.js';
import type { ChangeBus } from '../core/change-bus.js';

export interface OAuthDeps {
  store: Store;
  /** Where a key revoked because its code was replayed is announced (caches of every process). */
  bus: ChangeBus;
  now(): number;
}

const METHODS = ['S256', 'plain'] as const;

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

/** What an app asks for (the fields of `POST /auth/keys/code`, and of the `/auth` page's query). */
const authorizationFields = {
  callback_url: z.string().max(4096),
  code_challenge: z.string().max(256).optional(),
  code_challenge_method: z.enum(METHODS).optional(),
  key_label: z
    .string()
    .trim()
    .min(1, 'key_label must not be empty')
    .max(200, 'key_label must be at most 200 characters')
    .optional(),
  limit: limitSchema.nullable().optional(),
  usage_limit_type: z
    .enum(LIMIT_RESETS as [LimitReset, ...LimitReset[]])
    .nullable()
    .optional(),
  expires_at: expiresAtSchema.nullable().optional(),
};

export const createCodeSchema = z.strictObject({
  ...authorizationFields,
  workspace_id: z.string().max(200).optional(),
});

/** The page passes the query through: an empty or null optional field means "not given". */
function blankIsAbsent<S extends z.ZodType>(schema: S) {
  return z.preprocess((value) => (value === '' || value === null ? undefined : value), schema);
}

const pageFields = {
  callback_url: authorizationFields.callback_url,
  code_challenge: blankIsAbsent(authorizationFields.code_challenge),
  code_challenge_method: blankIsAbsent(authorizationFields.code_challenge_method),
  key_label: blankIsAbsent(authorizationFields.key_label),
  usage_limit_type: blankIsAbsent(authorizationFields.usage_limit_type),
  expires_at: blankIsAbsent(authorizationFields.expires_at),
};

/** The app's own `state` from /auth, given back on the callback as OAuth 2.0 clients expect (RFC 6749 §4.1.2). */
const stateField = blankIsAbsent(z.string().max(1024, 'state must be at most 1024 characters').optional());

/**
 * The approval page's preview: the same fields as query parameters (strings; unknown ones ignored),
 * `state` included — one the decision would refuse is refused here, before the holder is asked.
 */
export const previewQuerySchema = z.object({
  ...pageFields,
  state: stateField,
  limit: blankIsAbsent(z.coerce.number({ error: 'limit must be a number of USD' }).pipe(limitSchema).optional()),
});

export const approveSchema = z.strictObject({
  ...pageFields,
  limit: blankIsAbsent(authorizationFields.limit),
  state: stateField,
  decision: z.enum(['approve', 'deny']),
});

/**
 * The exchange, read as OAuth 2.0's token endpoint reads its parameters (RFC 6749 §3.2): one sent
 * empty is treated as omitted (a client that used no PKCE may still send `code_verifier: ""`), and
 * unknown ones are ignored.
 */
export const exchangeSchema = z.object({
  code: z.string().min(1, 'code is required').max(512),
  code_verifier: blankIsAbsent(z.string().max(512).optional()),
  code_challenge_method: blankIsAbsent(z.enum(METHODS).optional()),
});

export type AuthorizationInput = z.output<typeof createCodeSchema>;

/** A checked authorization request. */
export interface Authorization {
  callbackUrl: URL;
  origin: string;
  appName: string;
  keyLabel: string | null;
  challenge: string | null;
  method: CodeChallengeMethod | null;
  limit: Units | null;
  limitReset: LimitReset | null;
  keyExpiresAt: number | null;
}

function invalid(message: string): TollgateError {
  return new TollgateError('request.invalid_body', message);
}

/**
 * Whether `key` may ask for a code (`POST /auth/keys/code`): the code yields a key with the terms the
 * caller names, so only a caller that could have made such a key itself may — the holder (the
 * dashboard's session, a management key) or an inference key as broad as any (no limit, no expiry,
 * no guardrails, not an app's). A restricted key, or the key an app was given, would otherwise mint
 * itself a key without its restrictions, one that outlives revoking the app: 403.
 */
export async function assertMayAuthorize(deps: OAuthDeps, key: KeyRecord): Promise<void> {
  if (key.isManagement) return;
  const restricted =
    key.limit !== null || key.expiresAt !== null || key.allowedModels !== null || key.allowedProviders !== null;
  if (restricted || (await deps.store.accountAuth.appsOfKeys([key.hash])).has(key.hash))
    throw new TollgateError(
      'guardrail.forbidden',
      'This key cannot authorize other keys: it has a limit, an expiry or guardrails, or was issued to an app. Use an unrestricted key, a management key or the dashboard.',
    );
}

/** An app title from a header, made safe to store and show (display-text.ts), at most 100 characters; null if nothing is left. */
export function cleanAppTitle(raw: string | null): string | null {
  const text = raw === null ? '' : displayText(raw).slice(0, 100).trim();
  return text === '' ? null : text;
}

/**
 * Validates the callback (no open redirect), the PKCE challenge and the key's terms → 400 naming the
 * problem. The app's name: `key_label`, else the title the app sent (`X-OpenRouter-Title`, …), else its origin.
 */
export function checkAuthorization(
  input: Omit<AuthorizationInput, 'workspace_id'>,
  now: number,
  appTitle: string | null = null,
): Authorization {
  const callback = checkCallbackUrl(input.callback_url);
  if (!callback.ok) throw invalid(callback.message);
  const challenge = input.code_challenge ?? null;
  if (challenge === null && input.code_challenge_method !== undefined)
    throw invalid('code_challenge_method was given without code_challenge');
  if (challenge !== null && !PKCE_VALUE.test(challenge))
    throw invalid('code_challenge must be 43-128 characters of A-Z a-z 0-9 - . _ ~');
  const keyExpiresAt = input.expires_at ? Date.parse(input.expires_at) : null;
  if (keyExpiresAt !== null && keyExpiresAt <= now) throw invalid('expires_at must be in the future');
  const origin = appOriginOf(callback.url);
  // The app names its key: shown in the dashboard, on the approval page and in mails (display-text.ts).
  const keyLabel = (input.key_label === undefined ? '' : displayText(input.key_label)) || null;
  return {
    callbackUrl: callback.url,
    origin,
    appName: keyLabel ?? appTitle ?? origin,
    keyLabel,
    challenge,
    // RFC 7636 §4.3: a challenge without a method is `plain`.
    method: challenge === null ? null : (input.code_challenge_method ?? 'plain'),
    limit: input.limit === null || input.limit === undefined ? null : usdToUnits(input.limit),
    limitReset: input.usage_limit_type ?? null,
    keyExpiresAt,
  };
}

/** What the approval page shows the holder before they decide. */
export function renderAuthorization(authorization: Authorization): z.output<typeof authorizationPreviewSchema> {
  return {
    app: { origin: authorization.origin, name: authorization.appName },
    callback_url: authorization.callbackUrl.href,
    key_label: authorization.keyLabel,
    code_challenge_method: authorization.method,
    limit: authorization.limit === null ? null : unitsToUsd(authorization.limit),
    usage_limit_type: authorization.limitReset,
    expires_at: authorization.keyExpiresAt === null ? null : new Date(authorization.keyExpiresAt).toISOString(),
  };
}

export interface IssuedCode {
  code: string;
  appId: number;
  createdAt: number;
}

export async function issueCode(deps: OAuthDeps, accountId: string, authorization: Authorization): Promise<IssuedCode> {
  const now = deps.now();
  const appId = await deps.store.accountAuth.ensureOAuthApp(authorization.origin, now);
  const code = newAuthorizationCode();
  await deps.store.accountAuth.insertOAuthCode({
    codeHash: hashAuthorizationCode(code),
    accountId,
    appId,
    appName: authorization.appName,
    callbackUrl: authorization.callbackUrl.href,
    codeChallenge: authorization.challenge,
    codeChallengeMethod: authorization.method,
    keyLabel: authorization.keyLabel,
    limit: authorization.limit,
    limitReset: authorization.limitReset,
    keyExpiresAt: authorization.keyExpiresAt,
    createdAt: now,
    expiresAt: now + CODE_TTL_MS,
    usedAt: null,
  });
  return { code, appId, createdAt: now };
}

/** The page's answer to a decision: where the browser goes next, with the app's `state` when it gave one. */
export async function decide(
  deps: OAuthDeps,
  accountId: string,
  authorization: Authorization,
  decision: 'approve' | 'deny',
  state?: string,
): Promise<string> {
  const given: Record<string, string> = state === undefined ? {} : { state };
  if (decision === 'deny') return callbackWith(authorization.callbackUrl, { error: 'access_denied', ...given });
  const { code } = await issueCode(deps, accountId, authorization);
  return callbackWith(authorization.callbackUrl, { code, ...given });
}

const INVALID_CODE = 'Invalid code or code_verifier';

/**
 * The id of the grant a code's exchange makes, derived from the code's hash (one way: the id, shown
 * under Apps, reveals nothing of the code), so a replay of the code finds the key it gave.
 */
export function grantIdOf(codeHash: string): string {
  return `auth_${createHash('sha256').update('tollgate-grant\0').update(codeHash).digest('hex').slice(0, 24)}`;
}

async function revokeKeyOfCode(deps: OAuthDeps, codeHash: string, accountId: string): Promise<void> {
  const grant = await deps.store.accountAuth.getGrant(grantIdOf(codeHash));
  if (!grant || grant.accountId !== accountId) return; // voided unexchanged, or the key is gone already
  await deleteKey(deps, accountId, grant.key.hash).catch((error: unknown) => {
    // Deleted meanwhile (revoked by the holder, or by a concurrent replay): nothing left to revoke.
    if (!(error instanceof TollgateError && error.code === 'resource.not_found')) throw error;
  });
}

/** `POST /auth/keys`: the code and verifier → a new inference key of the holder's account (plaintext once). */
export async function exchangeCode(
  deps: OAuthDeps,
  input: z.output<typeof exchangeSchema>,
): Promise<{ key: string; accountId: string }> {
  const codeHash = hashAuthorizationCode(input.code);
  const record = await deps.store.accountAuth.getOAuthCode(codeHash);
  if (!record) throw new TollgateError('oauth.invalid_code', INVALID_CODE);
  if (record.usedAt === null && record.expiresAt <= deps.now())
    throw new TollgateError('oauth.code_expired', 'Authorization code expired');
  const method = input.code_challenge_method ?? null;
  if (method !== null && method !== record.codeChallengeMethod) {
    throw invalid(
      `code_challenge_method ${method} does not match the authorization request (${record.codeChallengeMethod ?? 'no PKCE'})`,
    );
  }
  if (record.codeChallenge !== null) {
    if (
      !input.code_verifier ||
      !verifierMatches(input.code_verifier, record.codeChallenge, record.codeChallengeMethod ?? 'plain')
    ) {
      throw new TollgateError('oauth.invalid_code', INVALID_CODE);
    }
  } else if (input.code_verifier !== undefined) {
    // A verifier for a code issued without a challenge (RFC 9700 §2.1.1): the client started with
    // PKCE, so this code is not the one its authorization request produced — one injected by an
    // attacker, or its challenge stripped on the way. Exchanged, it would put the app's traffic on
    // someone else's account.
    throw new TollgateError('oauth.invalid_code', INVALID_CODE);
  }
  if (record.usedAt !== null) {
    // Only a PKCE code within its lifetime: a code without a challenge is its own credential, and
    // anyone who saw it in a callback URL (history, logs) must not be able to revoke the app's key;
    // an expired one is no more than expired.
    if (record.codeChallenge === null || record.expiresAt <= deps.now())
      throw new TollgateError('oauth.invalid_code', INVALID_CODE);
    // Exchanged before — and presented again with its verifier (RFC 6749 §4.1.2, RFC 9700 §4.2.4):
    // the code leaked to a second party, so the key it gave is revoked as well as this request
    // refused. Not on a wrong verifier: whoever saw only a used code cannot revoke the app's key.
    await revokeKeyOfCode(deps, codeHash, record.accountId);
    throw new TollgateError('oauth.invalid_code', INVALID_CODE);
  }
  const account = await deps.store.getAccount(record.accountId);
  if (!account) throw new TollgateError('oauth.invalid_code', INVALID_CODE);
  const now = deps.now();
  const plaintext = generateKey();
  const key: KeyRecord = {
    hash: hashKey(plaintext),
    accountId: record.accountId,
    name: record.keyLabel ?? record.appName,
    label: maskKey(plaintext),
    isManagement: false,
    disabled: false,
    limit: record.limit,
    limitReset: record.limitReset,
    includeByokInLimit: false,
    expiresAt: record.keyExpiresAt,
    createdAt: now,
    updatedAt: null,
    creatorUserId: record.accountId,
    externalUser: null,
    workspaceId: 'default',
    allowedModels: null,
    allowedProviders: null,
    compromisedAt: null,
  };
  const redeemed = await deps.store.accountAuth.redeemOAuthCode(codeHash, now, key, grantIdOf(codeHash));
  if (!redeemed) {
    // Expired meanwhile, or lost a race with another exchange of the same code. The race is the replay
    // above arriving at the same moment (its verifier was right): the key the other exchange got is
    // revoked too — else two parties racing with a leaked code and verifier would leave one holding a
    // live key. The winner's transaction has committed once the conditional update saw the code used.
    if (record.expiresAt <= now) throw new TollgateError('oauth.code_expired', 'Authorization code expired');
    if (record.codeChallenge !== null) await revokeKeyOfCode(deps, codeHash, record.accountId);
    throw new TollgateError('oauth.invalid_code', INVALID_CODE);
  }
  return { key: plaintext, accountId: record.accountId };
}
