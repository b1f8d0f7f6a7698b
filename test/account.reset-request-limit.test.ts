/**
 * `POST /api/v1/password-reset` has a budget per client address
 * (`accounts.sign_in_limits.password_reset_per_address`, 20 per 15 minutes by default), kept by the
 * sign-in limiter (in process, or Redis). Without it the only bound was one mail per account per 5
 * minutes, so one anonymous source could have the gateway mail every holder whose address it knew,
 * again and again: flooding their mailboxes and burning the reputation of the SMTP sender that
 * exposed-key notices depend on. Every request takes a slot before the e-mail is looked up, so known
 * and unknown e-mails spend and answer alike; past the budget: 429 with Retry-After and the error
 * record of the other sign-in limits, and nothing is queued. An IPv6 client counts as its /64.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, type CallResult } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { LIMITER_TARGETS, type LimiterSpace } from './helpers/limiter-targets.js';
import { uniqueEmail } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MAIL = { from: 'Tollgate <noreply@tollgate.test>', public_url: 'https://dash.example.test/' };

/** An account without a password (the operator made it): no scrypt in the set-up. */
async function account(gw: TestGateway): Promise<string> {
  const email = uniqueEmail('reset-limit');
  expect((await gw.admin('POST', '/accounts', { email })).status).toBe(201);
  return email;
}

async function resetMailsTo(gw: TestGateway, emails: readonly string[]): Promise<number> {
  await new Promise((r) => setTimeout(r, 300)); // the work happens after the 202
  const rows = await gw.database.openDriver().all("SELECT recipient FROM mail_outbox WHERE kind = 'password_reset'");
  return rows.filter((row) => emails.includes(String(row.recipient))).length;
}

function expectThrottled(result: CallResult): void {
  const error = expectError(result, 429, /^Too many password-reset requests; try again in \d+ (seconds|minutes)$/);
  expect(error.metadata).toEqual({ error_type: 'rate_limit_exceeded' });
  expect(Number(result.headers['retry-after'])).toBeGreaterThan(0);
  expect(Number(result.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
}

describe('password-reset requests from one client address, default budget', { timeout: 60_000 }, () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => void ((file as Record<string, unknown>).mail = MAIL),
    });
  });
  afterAll(() => gw?.close());

  it('queue 20 mails for 30 holders; the rest are refused with 429 and queue nothing', async () => {
    const emails: string[] = [];
    for (let i = 0; i < 30; i++) emails.push(await account(gw));
    const results: CallResult[] = [];
    for (const email of emails) results.push(await call(gw, 'POST', '/password-reset', { json: { email } }));
    expect(results.slice(0, 20).map((r) => r.status)).toEqual(Array<number>(20).fill(202));
    for (const refused of results.slice(20)) expectThrottled(refused);
    expect(await resetMailsTo(gw, emails)).toBe(20);
  });
});

describe.each(LIMITER_TARGETS)('password-reset request budget ($name limiter)', (limiterTarget) => {
  let gw: TestGateway;
  let space: LimiterSpace;
  let offset = 0;
  const from = (address: string) => ({ 'x-forwarded-for': address });
  const ask = (email: string, address: string) =>
    call(gw, 'POST', '/password-reset', { json: { email }, headers: from(address) });

  beforeAll(async () => {
    space = await limiterTarget.createSpace();
    gw = await startTestGateway({
      target: sqliteTarget,
      clock: { now: () => Date.now() + offset },
      rateLimiter: { limiter: await space.open(), store: limiterTarget.name },
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
        Object.assign(file, { mail: MAIL, accounts: { sign_in_limits: { password_reset_per_address: 2 } } });
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await space?.cleanup();
  });

  it('is spent by unknown e-mails too, answers known and unknown alike, and frees after the window', async () => {
    const holder = await account(gw);
    const nobody = () => uniqueEmail('nobody');
    expect((await ask(nobody(), '198.51.100.7')).status).toBe(202);
    expect((await ask(nobody(), '198.51.100.7')).status).toBe(202);
    // The unknown e-mails spent the budget: the holder's request is refused, exactly as an unknown one is.
    const known = await ask(holder, '198.51.100.7');
    const unknown = await ask(nobody(), '198.51.100.7');
    expectThrottled(known);
    expectThrottled(unknown);
    expect(known.text.replace(/\d+/g, 'N')).toBe(unknown.text.replace(/\d+/g, 'N'));
    expect(await resetMailsTo(gw, [holder])).toBe(0);

    // Another client address has its own budget.
    expect((await ask(holder, '203.0.113.9')).status).toBe(202);
    expect(await resetMailsTo(gw, [holder])).toBe(1);

    // After the window (15 minutes), the first address may ask again.
    offset += 15 * 60_000 + 1;
    expect((await ask(nobody(), '198.51.100.7')).status).toBe(202);
  });

  it('counts an IPv6 client as its /64', async () => {
    expect((await ask(uniqueEmail('nobody'), '2001:db8:7:8::1')).status).toBe(202);
    expect((await ask(uniqueEmail('nobody'), '2001:db8:7:8:aaaa::2')).status).toBe(202);
    expectThrottled(await ask(uniqueEmail('nobody'), '2001:db8:7:8:ffff:ffff:ffff:ffff'));
    expect((await ask(uniqueEmail('nobody'), '2001:db8:7:9::1')).status).toBe(202);
  });
});
