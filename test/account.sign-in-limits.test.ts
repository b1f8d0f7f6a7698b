/**
 * Brute-force protection of sign-in (per e-mail address and client address, per e-mail address from
 * every address, per client address; on the in-process and the Redis limiter) and session lifetimes
 * (absolute, rolling, renewal writes), on an injected clock so minutes and days pass at once. The
 * gateway trusts one proxy, so each attempt's X-Forwarded-For is the client address it counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { LIMITER_TARGETS, type LimiterSpace } from './helpers/limiter-targets.js';
import { asBrowser, createHolder, signIn, uniqueEmail } from './helpers/session.js';
import { STORE_TARGETS, sqliteTarget } from './helpers/store-targets.js';

const MINUTE = 60_000;
/** Each attempt runs scrypt (tens of ms alone, far more on a loaded 2-core box): room for two dozen. */
const SCRYPT_HEAVY_MS = 180_000;
const DAY = 86_400_000;

function steppableClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

const LOCAL = '127.0.0.1';
const attempt = (gw: TestGateway, email: string, password: string, from = LOCAL) =>
  call(gw, 'POST', '/session', { json: { email, password }, headers: { 'x-forwarded-for': from } });

describe.each(LIMITER_TARGETS)('sign-in limits ($name limiter)', (limiterTarget) => {
  let gw: TestGateway;
  let space: LimiterSpace;
  const clock = steppableClock();

  beforeAll(async () => {
    space = await limiterTarget.createSpace();
    gw = await startTestGateway({
      target: sqliteTarget,
      clock,
      rateLimiter: { limiter: await space.open(), store: limiterTarget.name },
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await space.cleanup();
  });

  it(
    '5 failures per e-mail from one address in 15 minutes, then 429 with Retry-After there even for the right password; the holder still signs in from elsewhere; other accounts unaffected; open again after the window',
    async () => {
      const holder = await createHolder(gw);
      const attacker = '198.51.100.66';
      for (let i = 0; i < 5; i++)
        expectError(
          await attempt(gw, holder.email, `wrong password ${i}`, attacker),
          401,
          'Invalid e-mail or password',
        );
      const refused = await attempt(gw, holder.email, holder.password, attacker);
      const error = expectError(refused, 429, /Too many sign-in attempts/);
      expect(error.metadata).toEqual({ error_type: 'rate_limit_exceeded' });
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(14 * 60);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      expect(refused.headers['set-cookie']).toBeUndefined();
      // Wrong passwords typed from one address do not lock the holder out of their account.
      await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': LOCAL });
      // The limit is per e-mail: another holder signs in from the attacker's address.
      const other = await createHolder(gw);
      await signIn(gw, other.email, other.password, { 'x-forwarded-for': attacker });
      clock.advance(15 * MINUTE + 1000);
      await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': attacker });
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    'an IPv6 client counts as its /64: new source addresses within it do not buy more guesses; another /64 is another client',
    async () => {
      const holder = await createHolder(gw);
      for (let i = 1; i <= 5; i++)
        expectError(await attempt(gw, holder.email, 'wrong password!', `2001:db8:7:1::${i}`), 401);
      expectError(await attempt(gw, holder.email, holder.password, '2001:db8:7:1:ffff:ffff:ffff:ffff'), 429);
      await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': '2001:db8:7:2::1' });
      clock.advance(15 * MINUTE + 1000);
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    'guessing spread over many addresses is bounded too: 20 failures per e-mail from all addresses, then 429 from anywhere',
    async () => {
      const holder = await createHolder(gw);
      for (let source = 1; source <= 4; source++)
        for (let i = 0; i < 5; i++)
          expectError(await attempt(gw, holder.email, 'wrong password!', `203.0.113.${source}`), 401);
      expectError(await attempt(gw, holder.email, holder.password, '203.0.113.99'), 429);
      clock.advance(15 * MINUTE + 1000);
      await signIn(gw, holder.email, holder.password);
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    'a successful sign-in takes no slot: 4 failures, a success, a 5th failure still answer 401, the next attempt 429',
    async () => {
      const holder = await createHolder(gw);
      for (let i = 0; i < 4; i++) expectError(await attempt(gw, holder.email, 'wrong password!'), 401);
      await signIn(gw, holder.email, holder.password);
      expectError(await attempt(gw, holder.email, 'wrong password!'), 401);
      expectError(await attempt(gw, holder.email, holder.password), 429);
      clock.advance(15 * MINUTE + 1000);
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    'unknown e-mails are limited the same way (the limit reveals nothing about which e-mails exist), case-insensitively',
    async () => {
      const email = uniqueEmail('nobody');
      for (let i = 0; i < 5; i++)
        expectError(
          await attempt(gw, i % 2 ? email.toUpperCase() : email, 'some password'),
          401,
          'Invalid e-mail or password',
        );
      expectError(await attempt(gw, email, 'some password'), 429);
      clock.advance(15 * MINUTE + 1000);
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    'parallel guesses cannot outrun the limit: of 12 concurrent wrong attempts exactly 5 are checked',
    async () => {
      const holder = await createHolder(gw);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => attempt(gw, holder.email, `parallel guess ${i}`)),
      );
      expect(results.filter((r) => r.status === 401)).toHaveLength(5);
      expect(results.filter((r) => r.status === 429)).toHaveLength(7);
      clock.advance(15 * MINUTE + 1000);
    },
    SCRYPT_HEAVY_MS,
  );

  it(
    '20 failures per client address in 15 minutes, whatever the e-mails, then 429',
    async () => {
      for (let i = 0; i < 20; i++) expectError(await attempt(gw, uniqueEmail('spray'), 'password spray'), 401);
      const holder = await createHolder(gw);
      const refused = await attempt(gw, holder.email, holder.password);
      expectError(refused, 429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      clock.advance(15 * MINUTE + 1000);
      await signIn(gw, holder.email, holder.password);
    },
    SCRYPT_HEAVY_MS,
  );
});

describe.each(STORE_TARGETS)('a familiar address ($name)', { timeout: SCRYPT_HEAVY_MS }, (target) => {
  let gw: TestGateway;
  const clock = steppableClock();

  beforeAll(async () => {
    gw = await startTestGateway({
      target,
      clock,
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
      },
    });
  });
  afterAll(() => gw.close());

  it('guessing from many addresses spends the account-wide budget, but not for an address the holder signed in from in the last 30 days', async () => {
    const holder = await createHolder(gw);
    const home = '192.0.2.50';
    await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': home });
    for (let source = 1; source <= 4; source++)
      for (let i = 0; i < 5; i++)
        expectError(await attempt(gw, holder.email, 'wrong password!', `203.0.113.${source}`), 401);
    // Spent for everyone else, the holder's new laptop included...
    expectError(await attempt(gw, holder.email, holder.password, '203.0.113.99'), 429);
    expectError(await attempt(gw, holder.email, holder.password, '198.51.100.1'), 429);
    // ...but not from home, where the per-address budgets still count.
    await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': home });
    for (let i = 0; i < 5; i++) expectError(await attempt(gw, holder.email, 'wrong password!', home), 401);
    expectError(await attempt(gw, holder.email, holder.password, home), 429);
    // Familiar for 30 days after the last success: a month later, home is a stranger like any other.
    clock.advance(15 * MINUTE + 1000);
    await signIn(gw, holder.email, holder.password, { 'x-forwarded-for': home });
    clock.advance(31 * DAY);
    for (let source = 1; source <= 4; source++)
      for (let i = 0; i < 5; i++)
        expectError(await attempt(gw, holder.email, 'wrong password!', `203.0.113.${source}`), 401);
    expectError(await attempt(gw, holder.email, holder.password, home), 429);
  });
});

describe.each(STORE_TARGETS)('session lifetime ($name)', { timeout: 120_000 }, (target) => {
  let gw: TestGateway;
  const clock = steppableClock();

  beforeAll(async () => {
    gw = await startTestGateway({ target, clock });
  });
  afterAll(() => gw.close());

  const lastSeen = async (accountId: string) => {
    const [row] = await gw.database
      .openDriver()
      .all('SELECT last_seen_at FROM sessions WHERE account_id = ? ORDER BY created_at DESC', [accountId]);
    return Number(row!.last_seen_at);
  };

  it('rolling: each use pushes the 7-day idle expiry forward; the renewal is written at most every 5 minutes; 7 idle days end it', async () => {
    const holder = await createHolder(gw);
    const session = await signIn(gw, holder.email, holder.password);
    const signedInAt = await lastSeen(holder.id);
    clock.advance(MINUTE);
    expect((await asBrowser(gw, session, 'GET', '/session')).status).toBe(200);
    expect(await lastSeen(holder.id)).toBe(signedInAt); // not yet due
    clock.advance(5 * MINUTE);
    const renewed = await asBrowser(gw, session, 'GET', '/session');
    expect(renewed.status).toBe(200);
    const renewedAt = await lastSeen(holder.id);
    expect(renewedAt).toBeGreaterThanOrEqual(signedInAt + 6 * MINUTE);
    expect(Date.parse(renewed.json.data.expires_at)).toBe(renewedAt + 7 * DAY);
    clock.advance(6 * DAY);
    expect((await asBrowser(gw, session, 'GET', '/keys')).status).toBe(200); // day 6: renewed
    clock.advance(6 * DAY);
    expect((await asBrowser(gw, session, 'GET', '/session')).status).toBe(200); // day 12: alive thanks to the renewal
    clock.advance(7 * DAY);
    expectError(await asBrowser(gw, session, 'GET', '/session'), 401); // 7 idle days
  });

  it('absolute: 30 days after sign-in the session ends however active it was', async () => {
    const holder = await createHolder(gw);
    const session = await signIn(gw, holder.email, holder.password);
    for (let day = 5; day < 30; day += 5) {
      clock.advance(5 * DAY);
      expect((await asBrowser(gw, session, 'GET', '/session')).status, `day ${day}`).toBe(200);
    }
    clock.advance(5 * DAY);
    expectError(await asBrowser(gw, session, 'GET', '/session'), 401);
    // A fresh sign-in works.
    await signIn(gw, holder.email, holder.password);
  });
});
