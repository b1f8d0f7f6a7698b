/** `AccountAuthStore` over either SQL driver (same SQL text for SQLite and PostgreSQL). */
import { LIMIT_RESETS, type LimitReset } from '../core/usage-window.js';
import { ACCOUNT_COLUMNS, accountFromRow } from './account-rows.js';
import type {
  AccountAuthStore,
  CodeChallengeMethod,
  OAuthApp,
  OAuthCodeRecord,
  OAuthGrant,
  SessionRecord,
} from './account-auth-store.js';
import { KEY_COLUMNS, keyFromRow, keyToParams } from './key-rows.js';
import { asBigInt, asNullableBigInt, asNullableNumber, asNullableString, asNumber, asString } from './row-values.js';
import { placeholderTuple, type SqlDriver, type SqlRow } from './sql-driver.js';
import type { AccountRecord, KeyRecord } from './types.js';
import type { Units } from '../core/money.js';

const SESSION_COLUMNS = 'id, token_hash, account_id, created_at, last_seen_at, expires_at, revoked_at';
const CODE_COLUMNS =
  'code_hash, account_id, app_id, app_name, callback_url, code_challenge, code_challenge_method, key_label, limit_amount, limit_reset, key_expires_at, created_at, expires_at, used_at';
const KEY_COUNT = KEY_COLUMNS.split(',').length;
const CODE_COUNT = CODE_COLUMNS.split(',').length;
/** Grant columns plus the app's origin and every key column, prefixed `k.`. */
const GRANT_SELECT = `g.id AS grant_id, g.account_id AS grant_account_id, g.app_id, g.app_name, g.created_at AS grant_created_at, a.origin, ${KEY_COLUMNS.split(
  ', ',
)
  .map((c) => `k.${c}`)
  .join(', ')}`;
const GRANT_FROM =
  'oauth_grants g JOIN oauth_apps a ON a.id = g.app_id JOIN api_keys k ON k.hash = g.key_hash AND k.deleted_at IS NULL';
const LOOKUP_CHUNK = 100;

function sessionFromRow(row: SqlRow): SessionRecord {
  return {
    id: asString(row.id),
    tokenHash: asString(row.token_hash),
    accountId: asString(row.account_id),
    createdAt: asNumber(row.created_at),
    lastSeenAt: asNumber(row.last_seen_at),
    expiresAt: asNumber(row.expires_at),
    revokedAt: asNullableNumber(row.revoked_at),
  };
}

function asMethod(value: unknown): CodeChallengeMethod | null {
  const text = asNullableString(value);
  if (text === null) return null;
  if (text === 'S256' || text === 'plain') return text;
  throw new TypeError(`unknown code_challenge_method "${text}"`);
}

function asReset(value: unknown): LimitReset | null {
  const text = asNullableString(value);
  if (text === null) return null;
  const reset = LIMIT_RESETS.find((candidate) => candidate === text);
  if (reset === undefined) throw new TypeError(`unknown limit_reset "${text}"`);
  return reset;
}

function codeFromRow(row: SqlRow): OAuthCodeRecord {
  return {
    codeHash: asString(row.code_hash),
    accountId: asString(row.account_id),
    appId: asNumber(row.app_id),
    appName: asString(row.app_name),
    callbackUrl: asNullableString(row.callback_url),
    codeChallenge: asNullableString(row.code_challenge),
    codeChallengeMethod: asMethod(row.code_challenge_method),
    keyLabel: asNullableString(row.key_label),
    limit: asNullableBigInt(row.limit_amount),
    limitReset: asReset(row.limit_reset),
    keyExpiresAt: asNullableNumber(row.key_expires_at),
    createdAt: asNumber(row.created_at),
    expiresAt: asNumber(row.expires_at),
    usedAt: asNullableNumber(row.used_at),
  };
}

function grantFromRow(row: SqlRow): OAuthGrant {
  return {
    id: asString(row.grant_id),
    accountId: asString(row.grant_account_id),
    app: { id: asNumber(row.app_id), name: asString(row.app_name), origin: asString(row.origin) },
    createdAt: asNumber(row.grant_created_at),
    key: keyFromRow(row),
  };
}

export class SqlAccountAuthStore implements AccountAuthStore {
  constructor(private readonly driver: SqlDriver) {}

  async findAccountByEmail(email: string): Promise<AccountRecord | null> {
    const [row] = await this.driver.all(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = ?`, [email]);
    return row ? accountFromRow(row) : null;
  }

  setPassword(accountId: string, passwordHash: string, now: number): Promise<boolean> {
    return this.driver.transaction(async (tx) => {
      const result = await tx.run('UPDATE accounts SET password_hash = ? WHERE id = ?', [passwordHash, accountId]);
      if (result.changes === 0) return false;
      await tx.run('UPDATE password_reset_tokens SET used_at = ? WHERE account_id = ? AND used_at IS NULL', [
        now,
        accountId,
      ]);
      return true;
    });
  }

  async totalGranted(accountId: string): Promise<Units> {
    const [row] = await this.driver.all(
      "SELECT COALESCE(SUM(amount), 0) AS total FROM credit_entries WHERE account_id = ? AND kind = 'grant'",
      [accountId],
    );
    return row ? asBigInt(row.total) : 0n;
  }

  async rehashPassword(accountId: string, oldHash: string, newHash: string): Promise<boolean> {
    const result = await this.driver.run('UPDATE accounts SET password_hash = ? WHERE id = ? AND password_hash = ?', [
      newHash,
      accountId,
      oldHash,
    ]);
    return result.changes > 0;
  }

  insertSession(session: SessionRecord, passwordHash: string): Promise<boolean> {
    return this.driver.transaction(async (tx) => {
      // The account row's lock (PostgreSQL; SQLite runs one writer at a time): a password set in
      // flight — which updates this row before it revokes the account's sessions — is waited for and
      // then seen below; one that comes later waits for this insert and revokes the session with the rest.
      const locked = await tx.run('UPDATE accounts SET id = id WHERE id = ?', [session.accountId]);
      if (locked.changes === 0) return false;
      const [row] = await tx.all('SELECT password_hash FROM accounts WHERE id = ?', [session.accountId]);
      if (!row || asNullableString(row.password_hash) !== passwordHash) return false;
      await tx.run(`INSERT INTO sessions (${SESSION_COLUMNS}) VALUES ${placeholderTuple(7)}`, [
        session.id,
        session.tokenHash,
        session.accountId,
        session.createdAt,
        session.lastSeenAt,
        session.expiresAt,
        session.revokedAt,
      ]);
      return true;
    });
  }

  async getSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null> {
    const [row] = await this.driver.all(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE token_hash = ?`, [tokenHash]);
    return row ? sessionFromRow(row) : null;
  }

  async touchSession(id: string, lastSeenAt: number): Promise<void> {
    // Never moves backwards (two processes may renew the same session at nearly the same time).
    await this.driver.run('UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?', [
      lastSeenAt,
      id,
      lastSeenAt,
    ]);
  }

  async revokeSession(id: string, revokedAt: number): Promise<boolean> {
    const result = await this.driver.run('UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [
      revokedAt,
      id,
    ]);
    return result.changes > 0;
  }

  revokeAccountSessions(accountId: string, revokedAt: number, exceptId?: string): Promise<number> {
    return this.driver.transaction(async (tx) => {
      const result = await tx.run(
        `UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ?${exceptId === undefined ? '' : ' AND id <> ?'}`,
        exceptId === undefined ? [revokedAt, accountId, revokedAt] : [revokedAt, accountId, revokedAt, exceptId],
      );
      // Codes approved in those sessions (or by a key, minutes ago) go with them: not yet exchanged, void.
      await tx.run('UPDATE oauth_codes SET used_at = ? WHERE account_id = ? AND used_at IS NULL', [
        revokedAt,
        accountId,
      ]);
      return result.changes;
    });
  }

  async rememberSignInAddress(accountId: string, addressTag: string, now: number): Promise<void> {
    await this.driver.run(
      `INSERT INTO sign_in_addresses (account_id, address_tag, last_success_at) VALUES (?, ?, ?)
       ON CONFLICT (account_id, address_tag) DO UPDATE SET last_success_at = excluded.last_success_at
       WHERE sign_in_addresses.last_success_at < excluded.last_success_at`,
      [accountId, addressTag, now],
    );
  }

  async signedInFrom(accountId: string, addressTag: string, since: number): Promise<boolean> {
    const [row] = await this.driver.all(
      'SELECT 1 AS found FROM sign_in_addresses WHERE account_id = ? AND address_tag = ? AND last_success_at >= ?',
      [accountId, addressTag, since],
    );
    return row !== undefined;
  }

  async deleteExpired(now: number, addressesBefore?: number): Promise<void> {
    await this.driver.run('DELETE FROM sessions WHERE expires_at <= ? OR revoked_at IS NOT NULL', [now]);
    await this.driver.run('DELETE FROM oauth_codes WHERE expires_at <= ?', [now]);
    if (addressesBefore !== undefined)
      await this.driver.run('DELETE FROM sign_in_addresses WHERE last_success_at < ?', [addressesBefore]);
  }

  async ensureOAuthApp(origin: string, now: number): Promise<number> {
    // Portable integer ids (the SDK wants `app_id` as an integer): max + 1, retried if another
    // process took the same id first; the origin is unique, so a concurrent insert of it wins once.
    for (let attempt = 0; attempt < 10; attempt++) {
      const [existing] = await this.driver.all('SELECT id FROM oauth_apps WHERE origin = ?', [origin]);
      if (existing) return asNumber(existing.id);
      await this.driver.run(
        'INSERT INTO oauth_apps (id, origin, created_at) SELECT COALESCE(MAX(id), 0) + 1, ?, ? FROM oauth_apps WHERE 1 = 1 ON CONFLICT DO NOTHING',
        [origin, now],
      );
    }
    throw new Error(`could not allocate an OAuth app id for ${origin}`);
  }

  async insertOAuthCode(code: OAuthCodeRecord): Promise<void> {
    await this.driver.run(`INSERT INTO oauth_codes (${CODE_COLUMNS}) VALUES ${placeholderTuple(CODE_COUNT)}`, [
      code.codeHash,
      code.accountId,
      code.appId,
      code.appName,
      code.callbackUrl,
      code.codeChallenge,
      code.codeChallengeMethod,
      code.keyLabel,
      code.limit,
      code.limitReset,
      code.keyExpiresAt,
      code.createdAt,
      code.expiresAt,
      code.usedAt,
    ]);
  }

  async getOAuthCode(codeHash: string): Promise<OAuthCodeRecord | null> {
    const [row] = await this.driver.all(`SELECT ${CODE_COLUMNS} FROM oauth_codes WHERE code_hash = ?`, [codeHash]);
    return row ? codeFromRow(row) : null;
  }

  async redeemOAuthCode(codeHash: string, now: number, key: KeyRecord, grantId: string): Promise<boolean> {
    return this.driver.transaction(async (tx) => {
      // The conditional update is the single-use guarantee: of two concurrent exchanges, one changes the row.
      const [row] = await tx.all(
        'UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING app_id, app_name, account_id',
        [now, codeHash, now],
      );
      if (!row) return false;
      await tx.run(`INSERT INTO api_keys (${KEY_COLUMNS}) VALUES ${placeholderTuple(KEY_COUNT)}`, keyToParams(key));
      await tx.run(
        'INSERT INTO oauth_grants (id, account_id, app_id, app_name, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        [grantId, asString(row.account_id), asNumber(row.app_id), asString(row.app_name), key.hash, now],
      );
      return true;
    });
  }

  async listGrants(accountId: string): Promise<OAuthGrant[]> {
    const rows = await this.driver.all(
      `SELECT ${GRANT_SELECT} FROM ${GRANT_FROM} WHERE g.account_id = ? ORDER BY g.created_at DESC, g.id DESC LIMIT 1000`,
      [accountId],
    );
    return rows.map(grantFromRow);
  }

  async getGrant(id: string): Promise<OAuthGrant | null> {
    const [row] = await this.driver.all(`SELECT ${GRANT_SELECT} FROM ${GRANT_FROM} WHERE g.id = ?`, [id]);
    return row ? grantFromRow(row) : null;
  }

  async appsOfKeys(keyHashes: readonly string[]): Promise<Map<string, OAuthApp>> {
    const apps = new Map<string, OAuthApp>();
    const unique = [...new Set(keyHashes)];
    for (let start = 0; start < unique.length; start += LOOKUP_CHUNK) {
      const chunk = unique.slice(start, start + LOOKUP_CHUNK);
      const rows = await this.driver.all(
        `SELECT g.key_hash, g.app_id, g.app_name, a.origin FROM oauth_grants g JOIN oauth_apps a ON a.id = g.app_id WHERE g.key_hash IN ${placeholderTuple(chunk.length)}`,
        chunk,
      );
      for (const row of rows)
        apps.set(asString(row.key_hash), {
          id: asNumber(row.app_id),
          name: asString(row.app_name),
          origin: asString(row.origin),
        });
    }
    return apps;
  }
}
