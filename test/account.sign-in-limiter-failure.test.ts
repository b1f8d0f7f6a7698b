/**
 * Sign-in takes its three budgets one limiter call at a time; when the limiter fails part-way (a
 * Redis command timing out: the sign-in answers 503, no password is checked), the slots already
 * taken go back — a holder trying to sign in during such a blip must not be locked out of their own
 * account from their own address afterwards. The limiter here is the in-process one with the
 * per-e-mail budget's calls made to fail, as a Redis command would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import { MemoryRateLimiter } from '../src/limits/memory-rate-limiter.js';
import type { RateDecision, RateRule } from '../src/limits/rate-limit.js';
import { call } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { createHolder } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** The in-process limiter, whose calls for the per-e-mail budget fail while `failing` is set. */
class BlippingLimiter extends MemoryRateLimiter {
  failing = false;
  override async consume(subject: string, rules: readonly RateRule[], now: number): Promise<RateDecision> {
    if (this.failing && subject.startsWith('signin:'))
      throw new TollgateError('store.unavailable', 'The rate-limit store (Redis) is unavailable');
    return super.consume(subject, rules, now);
  }
}

describe('sign-in while the limiter fails part-way', () => {
  let gw: TestGateway;
  const limiter = new BlippingLimiter();

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      rateLimiter: { limiter, store: 'redis' },
      configure: (file) => {
        (file.server as Record<string, unknown>).trust_proxy = true;
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await limiter.close();
  });

  it('attempts that failed with 503 (no password checked) take no slot of any budget', async () => {
    const holder = await createHolder(gw);
    const from = { 'x-forwarded-for': '198.51.100.23' };
    const attempt = () =>
      call(gw, 'POST', '/session', { json: { email: holder.email, password: holder.password }, headers: from });
    limiter.failing = true;
    for (let i = 0; i < 5; i++) expect((await attempt()).status).toBe(503);
    limiter.failing = false;
    // The limiter is back; the holder types the right password, from the same address.
    const r = await attempt();
    expect(r.status, r.text).toBe(200);
  }, 60_000);
});
