/**
 * Account holders' notices through the outbox, read at a real SMTP server on loopback: low balance
 * (once until credits are added; per-account threshold; can be turned off), a key's limit at 80 % and
 * 100 % (once each per window), keys expiring within 7 days (once; can be turned off).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnitsUsd } from '../src/core/money.js';
import { call, expectError, HELLO } from './helpers/api.js';
import { chat, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { startInbox, type Inbox, type ReceivedMail } from './helpers/smtp-inbox.js';
import { asBrowser, createHolder, signIn } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

const DAY = 86_400_000;

describe('notifications', () => {
  let inbox: Inbox;
  let gw: TestGateway;

  beforeAll(async () => {
    inbox = await startInbox();
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_SMTP_URL: inbox.url },
      configure: (file) => {
        const f = file as Record<string, unknown>;
        f.mail = {
          from: 'Tollgate <noreply@tollgate.test>',
          poll_interval_ms: 100,
          retry_base_ms: 100,
          retry_max_ms: 400,
        };
        f.notifications = { check_delay_ms: 0, sweep_interval_ms: 150 };
      },
    });
    gw.gateway.startBackground();
  });

  afterAll(async () => {
    await gw?.close();
    await inbox?.close();
  });

  async function holder(credits: number) {
    const id = await gw.createAccount(credits);
    const email = (await gw.admin('GET', `/accounts/${id}`)).json.data.email as string;
    const management = await gw.createKey(id, { name: 'admin', management: true });
    return { id, email, management: management.key };
  }

  const mailTo = (email: string): ReceivedMail[] => inbox.messages.filter((m) => m.to.includes(email));

  async function waitForMail(email: string, count: number): Promise<ReceivedMail[]> {
    for (let i = 0; i < 300; i++) {
      if (mailTo(email).length >= count) return mailTo(email);
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`expected ${count} messages to ${email}, got ${mailTo(email).length}`);
  }

  /** The outbox is empty and a few sender polls and sweeps have passed. */
  async function quiet(): Promise<void> {
    await new Promise((r) => setTimeout(r, 400));
    for (let i = 0; i < 100 && (await gw.admin('GET', '/outbox')).json.data.length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
  }

  it('GET/PATCH /account/notifications: defaults, validation, management key only', async () => {
    const h = await holder(5);
    const inference = await gw.createKey(h.id);
    const got = await call(gw, 'GET', '/account/notifications', { key: h.management });
    expect(got.status).toBe(200);
    expect(got.json).toEqual({
      data: {
        low_balance: { enabled: true, threshold: 1 },
        key_limit: { enabled: true },
        key_expiry: { enabled: true },
      },
    });
    const patched = await call(gw, 'PATCH', '/account/notifications', {
      key: h.management,
      json: { low_balance: { threshold: 2.5 }, key_limit: { enabled: false } },
    });
    expect(patched.json).toEqual({
      data: {
        low_balance: { enabled: true, threshold: 2.5 },
        key_limit: { enabled: false },
        key_expiry: { enabled: true },
      },
    });
    expect((await call(gw, 'GET', '/account/notifications', { key: h.management })).json).toEqual(patched.json);
    expectError(
      await call(gw, 'PATCH', '/account/notifications', {
        key: h.management,
        json: { low_balance: { threshold: -1 } },
      }),
      400,
    );
    expectError(
      await call(gw, 'PATCH', '/account/notifications', {
        key: h.management,
        json: { key_exposure: { enabled: false } },
      }),
      400,
    );
    expectError(await call(gw, 'GET', '/account/notifications', { key: inference.key }), 401);
    expectError(await call(gw, 'GET', '/account/notifications'), 401);
  });

  it('the dashboard session reads and changes the same settings (CSRF required)', async () => {
    const h = await createHolder(gw);
    const session = await signIn(gw, h.email, h.password);
    expect((await asBrowser(gw, session, 'GET', '/account/notifications')).json.data.key_expiry).toEqual({
      enabled: true,
    });
    expectError(
      await asBrowser(gw, session, 'PATCH', '/account/notifications', {
        json: { key_expiry: { enabled: false } },
        csrf: null,
      }),
      403,
    );
    const changed = await asBrowser(gw, session, 'PATCH', '/account/notifications', {
      json: { key_expiry: { enabled: false } },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.data.key_expiry).toEqual({ enabled: false });
  });

  it('low balance: once until credits are added, at the account threshold, and not when turned off', async () => {
    const h = await holder(1);
    const key = await gw.createKey(h.id);
    const answer = await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 });
    expect(answer.status).toBe(200);
    const [first] = await waitForMail(h.email, 1);
    expect(first!.subject).toBe('Your Tollgate balance is below 1.00 USD');
    // The balance to the last digit, never rounded to the cent (1.00 USD would read as no spend).
    const balance = 1_000_000_000n - BigInt(toUnits(answer.json.usage.cost as number));
    expect(first!.decoded).toContain(`credit balance is ${formatUnitsUsd(balance)} USD`);
    expect(formatUnitsUsd(balance)).not.toBe('1.00');
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(1);

    // Credits added: a new window; the account's own threshold applies.
    expect((await gw.admin('POST', `/accounts/${h.id}/credits`, { amount: 1, kind: 'grant' })).status).toBe(201);
    await call(gw, 'PATCH', '/account/notifications', { key: h.management, json: { low_balance: { threshold: 5 } } });
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    const second = (await waitForMail(h.email, 2))[1]!;
    expect(second.subject).toBe('Your Tollgate balance is below 5.00 USD');

    // Turned off: a new window (credits added) and still nothing.
    await call(gw, 'PATCH', '/account/notifications', { key: h.management, json: { low_balance: { enabled: false } } });
    expect((await gw.admin('POST', `/accounts/${h.id}/credits`, { amount: 0.5, kind: 'grant' })).status).toBe(201);
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(2);
  });

  it('low balance: a top-up that brings the credits back to an earlier total opens a new window; a downward adjustment opens none', async () => {
    const h = await holder(1);
    const key = await gw.createKey(h.id);
    await call(gw, 'PATCH', '/account/notifications', { key: h.management, json: { low_balance: { threshold: 5 } } });
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await waitForMail(h.email, 1);
    // Credits taken away (an operator's correction): not credits added, no new notice.
    const down = { amount: -0.25, kind: 'adjustment', reference: `down-${h.id}` };
    expect((await gw.admin('POST', `/accounts/${h.id}/credits`, down)).status).toBe(201);
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(1);
    // A purchase back to the first total: credits added, a new window, one notice.
    const up = { amount: 0.25, kind: 'purchase', reference: `up-${h.id}` };
    expect((await gw.admin('POST', `/accounts/${h.id}/credits`, up)).status).toBe(201);
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await waitForMail(h.email, 2);
    expect((await chat(gw, key.key, { model: 'test/chat', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(2);
  });

  it('a free model’s request charges nothing and sends no low-balance notice, even to an account with no credits', async () => {
    // Before, every free-tier account heard "balance below 1.00 USD" on its first free request (outside check).
    const h = await holder(0);
    const key = await gw.createKey(h.id);
    expect((await chat(gw, key.key, { model: 'test/chat:free', messages: HELLO, max_tokens: 5 })).status).toBe(200);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(0);
  });

  it("a key's limit: one notice at 80 % and one at 100 % of its window, then 402 and no more", async () => {
    const h = await holder(10);
    const probe = await gw.createKey(h.id, { name: 'probe' });
    const body = { model: 'test/chat', messages: HELLO, max_tokens: 5 };
    const cost = toUnits((await chat(gw, probe.key, body)).json.usage.cost as number);
    expect(cost).toBeGreaterThan(0);
    // 1.2 × one request: the first request uses 83 %, the second passes 100 %.
    const limit = Math.floor(cost * 1.2) / 1e9;
    const key = await gw.createKey(h.id, { name: 'budget', limit, limit_reset: 'daily' });
    expect((await chat(gw, key.key, body)).status).toBe(200);
    const [at80] = (await waitForMail(h.email, 1)).filter(
      (m) => m.subject?.includes('budget') || m.decoded.includes('"budget"'),
    );
    expect(at80!.subject).toMatch(/has used 80 % of its daily limit$/);
    expect(at80!.decoded).toContain('"budget"');
    // A limit of a fraction of a cent reads as itself, not "0.00 USD".
    expect(at80!.decoded).toContain(
      `has used ${formatUnitsUsd(BigInt(cost))} USD of its daily limit of ${formatUnitsUsd(BigInt(Math.floor(cost * 1.2)))} USD`,
    );
    expect(at80!.decoded).not.toContain(key.key.slice(9));
    expect((await chat(gw, key.key, body)).status).toBe(200);
    const at100 = (await waitForMail(h.email, 2))[1]!;
    expect(at100.subject).toMatch(/has used 100 % of its daily limit$/);
    expectError(await chat(gw, key.key, body), 402);
    await quiet();
    expect(mailTo(h.email)).toHaveLength(2);
  });

  it('keys expiring within 7 days are announced once; an account that turned it off hears nothing', async () => {
    const quietHolder = await holder(5);
    expect(
      (
        await call(gw, 'PATCH', '/account/notifications', {
          key: quietHolder.management,
          json: { key_expiry: { enabled: false } },
        })
      ).status,
    ).toBe(200);
    await gw.createKey(quietHolder.id, {
      name: 'quiet soon',
      expires_at: new Date(Date.now() + 2 * DAY).toISOString(),
    });
    const h = await holder(5);
    await gw.createKey(h.id, { name: 'later', expires_at: new Date(Date.now() + 30 * DAY).toISOString() });
    await gw.createKey(h.id, { name: 'soon', expires_at: new Date(Date.now() + 3 * DAY).toISOString() });
    const [notice] = await waitForMail(h.email, 1);
    expect(notice!.subject).toMatch(
      /^Your Tollgate API key sk-tg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3} expires on \d{4}-\d{2}-\d{2}$/,
    );
    expect(notice!.decoded).toContain('"soon"');
    await quiet();
    expect(mailTo(h.email)).toHaveLength(1);
    expect(mailTo(quietHolder.email)).toHaveLength(0);
  });
});
