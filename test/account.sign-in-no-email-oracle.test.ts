/**
 * The same answer — text and, as far as we can make it, time — for an unknown e-mail and a wrong
 * password: once an e-mail's account-wide budget is spent, the familiar-address check behind each
 * 429 does the same store work whether or not the e-mail has an account (it would otherwise take
 * measurably longer for e-mails that exist). The work is counted, not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { createHolder, uniqueEmail } from './helpers/session.js';
import { STORE_TARGETS } from './helpers/store-targets.js';
import type { Store } from '../src/store/types.js';

const attempt = (gw: TestGateway, email: string, password: string, from: string) =>
  call(gw, 'POST', '/session', { json: { email, password }, headers: { 'x-forwarded-for': from } });

/** The store the gateway sees, its account-auth queries counted. */
function counting(store: Store, counter: { queries: number }): Store {
  const accountAuth = new Proxy(store.accountAuth, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        counter.queries++;
        return value.apply(target, args);
      };
    },
  });
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'accountAuth') return accountAuth;
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe.each(STORE_TARGETS)('a spent account-wide budget ($name)', { timeout: 180_000 }, (target) => {
  let gw: TestGateway;
  const counter = { queries: 0 };

  beforeAll(async () => {
    gw = await startTestGateway({
      target,
      wrapStore: (store) => counting(store, counter),
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
      },
    });
  });
  afterAll(() => gw.close());

  it('answers a known and an unknown e-mail with the same 429 after the same store work', async () => {
    const holder = await createHolder(gw);
    const nobody = uniqueEmail('nobody');
    // Spend the account-wide budget (20) of both e-mails from four addresses, five each.
    for (const email of [holder.email, nobody])
      for (let source = 1; source <= 4; source++)
        for (let i = 0; i < 5; i++)
          expect((await attempt(gw, email, 'wrong password!', `203.0.113.${source}`)).status).toBe(401);

    const work: Record<string, number> = {};
    for (const [name, email, from] of [
      ['known', holder.email, '198.51.100.7'],
      ['unknown', nobody, '198.51.100.8'],
    ] as const) {
      const before = counter.queries;
      const refused = await attempt(gw, email, 'wrong password!', from);
      expect(refused.status, refused.text).toBe(429);
      work[name] = counter.queries - before;
    }
    expect(work.known).toBe(work.unknown);
  });
});
