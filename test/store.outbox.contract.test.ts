/**
 * One behaviour spec for the outbox, notification settings and compromised keys, run against the
 * embedded store and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxMessage } from '../src/store/mail-types.js';
import type { Store } from '../src/store/types.js';
import { keyFixture, newAccountFixture } from './helpers/store-fixtures.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';

let counter = 0;
function message(overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  const id = `mail_${++counter}_${Date.now()}`;
  return {
    id,
    kind: 'low_balance',
    dedupeKey: null,
    accountId: null,
    recipient: 'a@example.test',
    subject: 's',
    text: 't',
    html: '<p>h</p>',
    messageId: `<${id}@x>`,
    createdAt: 1_000,
    ...overrides,
  };
}

describe.each(STORE_TARGETS)('outbox store contract ($name)', (target) => {
  let database: StoreDatabase;
  let store: Store;

  beforeAll(async () => {
    database = await target.createDatabase();
    store = database.openStore();
    await store.migrate();
  });
  afterAll(() => database.cleanup());

  it('queues once per dedupe key; claims lease, count attempts and order by due time', async () => {
    const a = message({ dedupeKey: 'once:1', createdAt: 2_000 });
    const b = message({ createdAt: 1_000 });
    expect(await store.outbox.enqueue([a, b])).toBe(2);
    expect(await store.outbox.enqueue([message({ dedupeKey: 'once:1' })])).toBe(0);
    const first = await store.outbox.claim('w1', 5_000, 65_000);
    expect(first).toMatchObject({ id: b.id, attempts: 1, text: 't', html: '<p>h</p>', messageId: b.messageId });
    const second = await store.outbox.claim('w2', 5_000, 65_000);
    expect(second?.id).toBe(a.id);
    expect(await store.outbox.claim('w3', 5_000, 65_000)).toBeNull();

    // Only the lease holder marks; a retry is due later; a failure stays listed.
    expect(await store.outbox.markSent(b.id, 'w2', 6_000)).toBe(false);
    expect(await store.outbox.markSent(b.id, 'w1', 6_000)).toBe(true);
    await store.outbox.markRetry(a.id, 'w2', 10_000, 'ECONNECTION');
    expect(await store.outbox.claim('w3', 9_999, 70_000)).toBeNull();
    const retried = await store.outbox.claim('w3', 10_000, 70_000);
    expect(retried).toMatchObject({ id: a.id, attempts: 2, lastError: 'ECONNECTION' });
    await store.outbox.markFailed(a.id, 'w3', 11_000, '550 no such user');
    const undelivered = await store.outbox.listUndelivered(100, 0);
    expect(undelivered.map((m) => [m.id, m.failedAt, m.lastError])).toEqual([[a.id, 11_000, '550 no such user']]);
    expect(await store.outbox.stats()).toEqual({ undelivered: 0, oldestUndeliveredAt: null });
    await store.outbox.enqueue([message({ createdAt: 3_000 })]);
    expect(await store.outbox.stats()).toEqual({ undelivered: 1, oldestUndeliveredAt: 3_000 });
  });

  it('a password reset is claimed before mail due earlier (a holder waits for it; its link expires)', async () => {
    const notices = [1, 2, 3].map(() => message({ kind: 'key_compromised', createdAt: 10_000 }));
    const reset = message({ kind: 'password_reset', createdAt: 20_000 });
    await store.outbox.enqueue([...notices, reset]);
    const order: string[] = [];
    for (let entry; (entry = await store.outbox.claim('w', 30_000, 90_000));) order.push(entry.id);
    expect(order.indexOf(reset.id)).toBeGreaterThanOrEqual(0);
    for (const notice of notices) expect(order.indexOf(reset.id)).toBeLessThan(order.indexOf(notice.id));
  });

  it('an expired lease can be taken over, and the late sender can no longer mark it', async () => {
    const m = message({ createdAt: 100 });
    await store.outbox.enqueue([m]);
    let claimed;
    while ((claimed = await store.outbox.claim('old', 20_000, 30_000)) && claimed.id !== m.id)
      await store.outbox.markSent(claimed.id, 'old', 20_000);
    expect(claimed?.id).toBe(m.id);
    const taken = await store.outbox.claim('new', 30_000, 90_000);
    expect(taken?.id).toBe(m.id);
    expect(await store.outbox.markSent(m.id, 'old', 31_000)).toBe(false);
    expect(await store.outbox.markSent(m.id, 'new', 31_000)).toBe(true);
  });

  it('a reset message keeps its bodies only while it may be sent; giving it up also voids its token', async () => {
    const account = await store.createAccount(newAccountFixture());
    const reset = (token: string, createdAt: number) => {
      const mail = message({ kind: 'password_reset', accountId: account.id, text: `?token=${token}`, createdAt });
      return store.passwordResets.create(
        { tokenHash: token, accountId: account.id, createdAt, expiresAt: createdAt + 1_800_000 },
        mail,
      );
    };
    // Older than every other message here, so the claims below take these in order.
    expect(await reset('sent-token', 10)).toBe(true);
    expect(await reset('refused-token', 11)).toBe(true);
    expect(await reset('late-token', 12)).toBe(true);
    const driver = database.openDriver();
    const bodies = async (id: string) => {
      const [row] = await driver.all('SELECT text_body, html_body FROM mail_outbox WHERE id = ?', [id]);
      return [row?.text_body, row?.html_body];
    };

    const sent = (await store.outbox.claim('w1', 100, 200))!;
    expect(sent.text).toBe('?token=sent-token');
    expect(await store.outbox.markSent(sent.id, 'w1', 110)).toBe(true);
    expect(await bodies(sent.id)).toEqual(['', '']);
    // Delivered: the holder has the link, which still works.
    expect(await store.passwordResets.isRedeemable('sent-token', 120)).toBe(true);

    const refused = (await store.outbox.claim('w1', 100, 200))!;
    await store.outbox.markFailed(refused.id, 'w1', 130, '550 no such user');
    expect(await bodies(refused.id)).toEqual(['', '']);
    expect(await store.passwordResets.isRedeemable('refused-token', 140)).toBe(false);
    expect(await store.passwordResets.redeem('refused-token', 140, 'scrypt$x')).toBeNull();

    // A sender whose lease was lost gives nothing up: the new holder of the lease may be sending it.
    const late = (await store.outbox.claim('old', 100, 200))!;
    expect((await store.outbox.claim('new', 200, 300))?.id).toBe(late.id);
    await store.outbox.markFailed(late.id, 'old', 210, 'timeout');
    expect(await bodies(late.id)).toEqual(['?token=late-token', '<p>h</p>']);
    expect(await store.passwordResets.isRedeemable('late-token', 220)).toBe(true);
    expect(await store.outbox.markSent(late.id, 'new', 230)).toBe(true);
  });

  it('marks a key compromised and queues its mail in one transaction, once', async () => {
    const account = await store.createAccount(newAccountFixture());
    const key = keyFixture(account.id);
    await store.insertKey(key);
    // A failure while composing the mail rolls the whole change back.
    await expect(
      store.markKeyCompromised(key.hash, 50_000, () => {
        throw new Error('template failed');
      }),
    ).rejects.toThrow('template failed');
    expect((await store.getKey(key.hash))?.compromisedAt).toBeNull();

    const notice = message({
      kind: 'key_compromised',
      dedupeKey: `key_compromised:${key.hash}`,
      recipient: account.email,
    });
    const first = await store.markKeyCompromised(key.hash, 50_000, (k, a) => {
      expect(k.hash).toBe(key.hash);
      expect(a.id).toBe(account.id);
      return [notice];
    });
    expect(first).toMatchObject({ newly: true, queued: 1, key: { disabled: true, compromisedAt: 50_000 } });
    const again = await store.markKeyCompromised(key.hash, 60_000, () => [message()]);
    expect(again).toMatchObject({ newly: false, queued: 0, key: { compromisedAt: 50_000 } });
    expect(await store.markKeyCompromised('0'.repeat(64), 60_000, () => [])).toBeNull();
    await store.deleteKey(key.hash, 70_000);
    expect(await store.markKeyCompromised(key.hash, 80_000, () => [])).toBeNull();
  });

  it('notification settings: defaults, partial updates, expiring keys', async () => {
    const account = await store.createAccount(newAccountFixture());
    expect(await store.notifications.settings(account.id)).toEqual({
      lowBalanceEnabled: true,
      lowBalanceThreshold: null,
      keyLimitEnabled: true,
      keyExpiryEnabled: true,
    });
    expect(
      await store.notifications.updateSettings(account.id, { lowBalanceThreshold: 5_000_000_000n }, 1),
    ).toMatchObject({ lowBalanceThreshold: 5_000_000_000n, keyExpiryEnabled: true });
    expect(await store.notifications.updateSettings(account.id, { keyLimitEnabled: false }, 2)).toEqual({
      lowBalanceEnabled: true,
      lowBalanceThreshold: 5_000_000_000n,
      keyLimitEnabled: false,
      keyExpiryEnabled: true,
    });
    const soon = keyFixture(account.id, { expiresAt: 900_000_000 });
    const late = keyFixture(account.id, { expiresAt: 2_000_000_000 });
    const disabled = keyFixture(account.id, { expiresAt: 900_000_000, disabled: true });
    for (const k of [soon, late, disabled]) await store.insertKey(k);
    const found = (await store.notifications.expiringKeys(800_000_000, 1_000_000_000)).filter(
      (k) => k.accountId === account.id,
    );
    expect(found).toEqual([
      {
        hash: soon.hash,
        accountId: account.id,
        name: soon.name,
        label: soon.label,
        expiresAt: 900_000_000,
        email: account.email,
      },
    ]);
    await store.notifications.updateSettings(account.id, { keyExpiryEnabled: false }, 3);
    expect(
      (await store.notifications.expiringKeys(800_000_000, 1_000_000_000)).filter((k) => k.accountId === account.id),
    ).toEqual([]);
  });

  it('one reset token per account in any interval, also when several are asked for at once', async () => {
    const account = await store.createAccount(newAccountFixture());
    const other = await store.createAccount(newAccountFixture());
    const INTERVAL = 300_000;
    const at = 50_000_000;
    const reset = (owner: string, token: string, createdAt: number) =>
      store.passwordResets.create(
        { tokenHash: token, accountId: owner, createdAt, expiresAt: createdAt + 1_800_000 },
        message({ kind: 'password_reset', accountId: owner, createdAt }),
        INTERVAL,
      );
    // Several at once (a fleet's processes, one pool's connections): one of them, whichever came first.
    const atOnce = await Promise.all(Array.from({ length: 8 }, (_, i) => reset(account.id, `at-once-${i}`, at)));
    expect(atOnce.filter(Boolean)).toHaveLength(1);
    // Sliding, not a clock window: 1 ms short of the interval is refused, whatever boundary lies between.
    expect(await reset(account.id, 'too-soon', at + INTERVAL - 1)).toBe(false);
    expect(await store.passwordResets.isRedeemable('too-soon', at + INTERVAL)).toBe(false);
    expect(await reset(other.id, 'other-account', at + 1)).toBe(true);
    expect(await reset(account.id, 'next', at + INTERVAL)).toBe(true);
    expect(await store.passwordResets.isRedeemable('next', at + INTERVAL)).toBe(true);
    // No account, no token.
    expect(await reset('acct_missing', 'nobody', at)).toBe(false);
  });
});
