/**
 * Migration 8 links each password-reset token to the message carrying it (`message_id`), so giving
 * the message up voids the token. A database at version 7 is upgraded: tokens issued before are linked
 * through their message's dedupe key (`password_reset:<account>:<5-minute window>`), and reset messages
 * given up before lose their bodies and their tokens, as they would now; a pending one keeps both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../src/store/apply-migrations.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import type { SqlDriver } from '../src/store/sql-driver.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';

const WINDOW_MS = 5 * 60_000;

describe.each(STORE_TARGETS)('reset tokens of a database at version 7 ($name)', (target) => {
  let database: StoreDatabase;
  let driver: SqlDriver;

  beforeAll(async () => {
    database = await target.createDatabase();
    driver = database.openDriver();
    await applyMigrations(
      driver,
      Date.now,
      MIGRATIONS.filter((m) => m.version <= 7),
    );
  });
  afterAll(() => database.cleanup());

  async function issued(account: string, token: string, createdAt: number, failedAt: number | null): Promise<string> {
    const id = `mail_${token}`;
    await driver.run(
      'INSERT INTO mail_outbox (id, kind, dedupe_key, account_id, recipient, subject, text_body, html_body, message_id, created_at, next_attempt_at, failed_at) ' +
        "VALUES (?, 'password_reset', ?, ?, 'a@example.test', 's', ?, ?, ?, ?, ?, ?)",
      [
        id,
        `password_reset:${account}:${Math.floor(createdAt / WINDOW_MS)}`,
        account,
        `?token=${token}`,
        `<a href="?token=${token}">`,
        `<${id}@x>`,
        createdAt,
        createdAt,
        failedAt,
      ],
    );
    await driver.run(
      'INSERT INTO password_reset_tokens (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
      [token, account, createdAt, createdAt + 1_800_000],
    );
    return id;
  }

  it('links old tokens to their messages, and voids and blanks the ones given up', async () => {
    const at = 1_800_000_000_000;
    const pending = await issued('acct_a', 'pending-token', at + 1, null);
    const givenUp = await issued('acct_a', 'given-up-token', at + WINDOW_MS + 2, at + WINDOW_MS + 60_000);
    const other = await issued('acct_b', 'other-token', at + 3, null);

    expect(
      await applyMigrations(
        driver,
        Date.now,
        MIGRATIONS.filter((m) => m.version <= 8),
      ),
    ).toEqual([8]);

    const tokens = await driver.all(
      'SELECT token_hash, message_id, used_at FROM password_reset_tokens ORDER BY token_hash',
    );
    expect(tokens.map((t) => [t.token_hash, t.message_id, t.used_at === null ? null : Number(t.used_at)])).toEqual([
      ['given-up-token', givenUp, at + WINDOW_MS + 60_000],
      ['other-token', other, null],
      ['pending-token', pending, null],
    ]);
    const bodies = await driver.all('SELECT id, text_body, html_body FROM mail_outbox ORDER BY id');
    expect(bodies.map((b) => [b.id, b.text_body === '', b.html_body === ''])).toEqual([
      [givenUp, true, true],
      [other, false, false],
      [pending, false, false],
    ]);
  });
});
