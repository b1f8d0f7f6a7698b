/**
 * The outbox's delivery guarantees: SMTP down while messages are queued and the gateway restarted
 * meanwhile → each message arrives exactly once after SMTP returns; on PostgreSQL two senders (two
 * pools, as two processes would have) never send one message twice.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { registerMailMetrics } from '../src/mail/mail-metrics.js';
import { MailOutbox } from '../src/mail/mail-outbox.js';
import { OutboxSender } from '../src/mail/outbox-sender.js';
import { smtpTransport } from '../src/mail/smtp-transport.js';
import { lowBalanceMail } from '../src/mail/templates.js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Store } from '../src/store/types.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { freePort, startInbox, type Inbox } from './helpers/smtp-inbox.js';
import { postgresTarget, sqliteTarget, type StoreDatabase } from './helpers/store-targets.js';

const silent = pino({ level: 'silent' });
const MAIL = { from: 'Tollgate <noreply@tollgate.test>', poll_interval_ms: 100, retry_base_ms: 100, retry_max_ms: 300 };

describe('outbox: SMTP down, gateway restarted, SMTP back', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });

  it('every message queued while SMTP was down arrives exactly once after it returns', async () => {
    const port = await freePort();
    const database: StoreDatabase = await sqliteTarget.createDatabase();
    cleanup.push(() => database.cleanup());
    const start = () =>
      startTestGateway({
        target: sqliteTarget,
        database,
        env: { TOLLGATE_SMTP_URL: `smtp://127.0.0.1:${port}` },
        configure: (file) => void ((file as Record<string, unknown>).mail = MAIL),
      });

    // First life: three keys compromised while nothing listens on the SMTP port.
    const first: TestGateway = await start();
    first.gateway.startBackground();
    const account = await first.createAccount(5);
    const keys = [
      await first.createKey(account, { name: 'a' }),
      await first.createKey(account, { name: 'b' }),
      await first.createKey(account, { name: 'c' }),
    ];
    for (const key of keys) expect((await first.admin('POST', `/keys/${key.hash}/compromised`, {})).status).toBe(200);
    // The sender has tried and failed at least once for each (last_error recorded), and retries.
    for (let i = 0; ; i++) {
      const outbox = await first.admin('GET', '/outbox');
      expect(outbox.json.data).toHaveLength(3);
      if (
        outbox.json.data.every(
          (m: { attempts: number; last_error: string | null }) => m.attempts >= 1 && m.last_error !== null,
        )
      )
        break;
      if (i > 200) throw new Error('the sender never tried');
      await new Promise((r) => setTimeout(r, 50));
    }
    await first.close();

    // Second life on the same database, then SMTP comes up.
    const second = await start();
    cleanup.push(() => second.close());
    second.gateway.startBackground();
    const inbox: Inbox = await startInbox({ port });
    cleanup.push(() => inbox.close());
    const received = await inbox.waitFor(3);
    for (let i = 0; i < 100 && (await second.admin('GET', '/outbox')).json.data.length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect((await second.admin('GET', '/outbox')).json.data).toEqual([]);
    // Several more sender polls: nothing is sent twice.
    await new Promise((r) => setTimeout(r, 500));
    expect(received).toHaveLength(3);
    expect(new Set(received.map((m) => m.messageId)).size).toBe(3);
    for (const name of ['"a"', '"b"', '"c"']) expect(received.filter((m) => m.decoded.includes(name))).toHaveLength(1);

    const metrics = await (await fetch(`${second.url}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_mail_sent_total\{kind="key_compromised"\} 3/);
    expect(metrics).toMatch(/tollgate_mail_undelivered 0/);
  });
});

describe('outbox: stale messages', () => {
  it('a password-reset message older than its token is given up, not sent', async () => {
    const database = await sqliteTarget.createDatabase();
    const store = database.openStore();
    await store.migrate();
    const inbox = await startInbox();
    try {
      let now = 1_000_000;
      const mail = new MailOutbox(
        store.outbox,
        registerMailMetrics(new Registry(), store.outbox, () => now),
        () => now,
        MAIL.from,
      );
      const compose = (recipient: string) =>
        mail.compose(lowBalanceMail({ balanceUsd: '0', thresholdUsd: '1', dashboard: null }), {
          kind: 'password_reset',
          recipient,
          accountId: null,
          dedupeKey: null,
        });
      await mail.enqueue([compose('late@example.test')]);
      now += 30 * 60_000;
      await mail.enqueue([compose('fresh@example.test')]);
      const sender = new OutboxSender({
        store: store.outbox,
        transport: smtpTransport(inbox.url, MAIL.from, 5000),
        metrics: registerMailMetrics(new Registry(), store.outbox, () => now),
        log: silent,
        now: () => now,
        pollMs: 20,
        retryBaseMs: 50,
        retryMaxMs: 100,
        maxAttempts: 3,
        leaseMs: 60_000,
        expiresAfterMs: { password_reset: 30 * 60_000 },
      });
      sender.start();
      await inbox.waitFor(1);
      await sender.stop();
      expect(inbox.messages.map((m) => m.to)).toEqual([['fresh@example.test']]);
      expect((await store.outbox.listUndelivered(10, 0)).map((m) => [m.recipient, m.lastError])).toEqual([
        ['late@example.test', 'expired before it could be sent'],
      ]);
    } finally {
      await inbox.close();
      await database.cleanup();
    }
  });
});

describe('outbox on PostgreSQL: several senders', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });

  async function twoStores(): Promise<[Store, Store]> {
    const database = await postgresTarget.createDatabase();
    cleanup.push(() => database.cleanup());
    const a = database.openStore();
    const b = database.openStore();
    await a.migrate();
    await b.migrate();
    return [a, b];
  }

  function outboxOf(store: Store): MailOutbox {
    return new MailOutbox(
      store.outbox,
      registerMailMetrics(new Registry(), store.outbox, Date.now),
      Date.now,
      MAIL.from,
    );
  }

  it('concurrent claims never hand one message to two claimers (FOR UPDATE SKIP LOCKED)', async () => {
    const [a, b] = await twoStores();
    const mail = outboxOf(a);
    const messages = Array.from({ length: 20 }, (_, i) =>
      mail.compose(lowBalanceMail({ balanceUsd: '0.5', thresholdUsd: '1', dashboard: null }), {
        kind: 'low_balance',
        recipient: `u${i}@example.test`,
        accountId: null,
        dedupeKey: null,
      }),
    );
    expect(await mail.enqueue(messages)).toBe(20);
    const now = Date.now();
    const claims = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).outbox.claim(`owner-${i}`, now, now + 60_000)),
    );
    const claimed = claims.filter((c) => c !== null).map((c) => c!.id);
    expect(claimed).toHaveLength(20);
    expect(new Set(claimed).size).toBe(20);
    // Leased: nothing more to claim until the leases expire.
    expect(await a.outbox.claim('late', now, now + 60_000)).toBeNull();
    expect((await b.outbox.claim('after-expiry', now + 60_001, now + 120_000))?.attempts).toBe(2);
  });

  it('two senders deliver 30 messages, each exactly once', async () => {
    const [a, b] = await twoStores();
    const inbox = await startInbox({ delayMs: 15 });
    cleanup.push(() => inbox.close());
    const mail = outboxOf(a);
    const senders = [a, b].map(
      (store) =>
        new OutboxSender({
          store: store.outbox,
          transport: smtpTransport(inbox.url, MAIL.from, 5000),
          metrics: registerMailMetrics(new Registry(), store.outbox, Date.now),
          log: silent,
          now: Date.now,
          pollMs: 20,
          retryBaseMs: 50,
          retryMaxMs: 200,
          maxAttempts: 10,
          leaseMs: 60_000,
        }),
    );
    for (const sender of senders) cleanup.push(() => sender.stop());
    const messages = Array.from({ length: 30 }, (_, i) =>
      mail.compose(lowBalanceMail({ balanceUsd: String(i), thresholdUsd: '100', dashboard: null }), {
        kind: 'low_balance',
        recipient: `u${i}@example.test`,
        accountId: null,
        dedupeKey: `test:${i}`,
      }),
    );
    expect(await mail.enqueue(messages)).toBe(30);
    for (const sender of senders) sender.start();
    const received = await inbox.waitFor(30);
    for (let i = 0; i < 100 && (await a.outbox.stats()).undelivered > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toHaveLength(30);
    expect(new Set(received.map((m) => m.messageId))).toEqual(new Set(messages.map((m) => m.messageId)));
    expect(new Set(received.map((m) => m.to[0])).size).toBe(30);
    // A dedupe key is queued once, ever.
    expect(await mail.enqueue([messages[0]!, { ...messages[1]!, id: 'mail_other' }])).toBe(0);
  });
});
