/**
 * A sign-in still running when the password changes must not leave a live session (README, "Account
 * holders": a new password ends every session). The sign-in checks the old password (scrypt, tens of
 * milliseconds) and creates its session afterwards; a password set in that window used to revoke only
 * the sessions that existed, and the sign-in then added one that nothing ended — a 30-day session of
 * whoever knew the old password. Both stores, through real HTTP (an outside checker's finding).
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { asBrowser, cookieOf, createHolder, type BrowserSession } from './helpers/session.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(STORE_TARGETS)('a password set during a sign-in ($name)', { timeout: 120_000 }, (target) => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      target,
      configure: (file) =>
        Object.assign(file, {
          accounts: { sign_in_limits: { per_address: 1000, per_account: 1000, per_account_and_address: 1000 } },
        }),
    });
  });
  afterAll(() => gw.close());

  it('leaves no session of the old password alive, whichever finishes first', async () => {
    let signedIn = 0;
    for (let round = 0; round < 3; round++) {
      const holder = await createHolder(gw, 'the old password, known to someone');
      // Sign-ins with the old password spread over the time the new one takes to hash and store; the
      // password is set once the first has its session, while the others are on their way.
      const attempts = Array.from({ length: 12 }, async (_, i) => {
        await sleep(i * 20);
        return call(gw, 'POST', '/session', { json: { email: holder.email, password: holder.password } });
      });
      expect((await attempts[0]!).status).toBe(200);
      const set = await gw.admin('PUT' as 'POST', `/accounts/${holder.id}/password`, {
        password: 'the new password, chosen by the holder',
      });
      expect(set.status).toBe(200);
      const sessions: BrowserSession[] = [];
      for (const result of await Promise.all(attempts)) {
        expect([200, 401]).toContain(result.status);
        if (result.status === 200) sessions.push({ cookie: cookieOf(result), csrf: result.json.data.csrf_token });
      }
      signedIn += sessions.length;
      for (const session of sessions) expect((await asBrowser(gw, session, 'GET', '/session')).status).toBe(401);
      // The new password works.
      const fresh = await call(gw, 'POST', '/session', {
        json: { email: holder.email, password: 'the new password, chosen by the holder' },
      });
      expect(fresh.status).toBe(200);
    }
    // At least the first sign-in of each round got in with the old password before it was replaced.
    expect(signedIn).toBeGreaterThanOrEqual(3);
  });

  it('concurrent sign-ins on a hash of the first format all get in: the one whose upgrade lost uses the winner’s', async () => {
    const holder = await createHolder(gw);
    const salt = randomBytes(16);
    const legacy = `scrypt$${salt.toString('hex')}$${scryptSync(holder.password, salt, 32).toString('hex')}`;
    const driver = gw.database.openDriver();
    try {
      await driver.run('UPDATE accounts SET password_hash = ? WHERE id = ?', [legacy, holder.id]);
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          call(gw, 'POST', '/session', { json: { email: holder.email, password: holder.password } }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      for (const result of results) {
        const session = { cookie: cookieOf(result), csrf: result.json.data.csrf_token };
        expect((await asBrowser(gw, session, 'GET', '/session')).status).toBe(200);
      }
      const [row] = await driver.all('SELECT password_hash FROM accounts WHERE id = ?', [holder.id]);
      expect(String(row!.password_hash)).toMatch(/^scrypt\$N=/); // upgraded
    } finally {
      await driver.close();
    }
  });

  it('the store makes no session for a password hash that is no longer the account’s', async () => {
    const holder = await createHolder(gw);
    const store = gw.database.openStore();
    try {
      const [row] = await gw.database.openDriver().all('SELECT password_hash FROM accounts WHERE id = ?', [holder.id]);
      const current = String(row!.password_hash);
      const session = (id: string) => ({
        id,
        tokenHash: id.padEnd(64, '0'),
        accountId: holder.id,
        createdAt: Date.now(),
        lastSeenAt: Date.now(),
        expiresAt: Date.now() + 60_000,
        revokedAt: null,
      });
      expect(await store.accountAuth.insertSession(session('ses_stale'), `${current}-stale`)).toBe(false);
      expect(await store.accountAuth.insertSession(session('ses_current'), current)).toBe(true);
      expect(
        await store.accountAuth.insertSession({ ...session('ses_nobody'), accountId: 'acct_missing' }, current),
      ).toBe(false);
      const ids = (await gw.database.openDriver().all('SELECT id FROM sessions WHERE account_id = ?', [holder.id])).map(
        (r) => r.id,
      );
      expect(ids).toEqual(['ses_current']);
      // A sign-in upgrading the hash it checked does not undo a password set since.
      expect(await store.accountAuth.rehashPassword(holder.id, `${current}-stale`, 'scrypt$other')).toBe(false);
      expect(await store.accountAuth.rehashPassword(holder.id, current, `${current}`)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
