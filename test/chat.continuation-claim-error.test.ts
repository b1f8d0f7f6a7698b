/**
 * A per-attempt claim (RequestCapacity.acquire: the capacity limits, the free-model slot) that cannot
 * be checked — its store down and the limit failing closed — refuses that endpoint instead of throwing
 * out of the execute loop. In a mid-stream continuation the throw escaped the relay: the streamed
 * segment was never charged, the continuation's extra hold was never released (renewed for as long as
 * the process ran), and the breaker's probe slot was kept. Now the first segment is charged, the
 * caller gets the in-band error, and no hold outlives the request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import { MemoryRateLimiter } from '../src/limits/memory-rate-limiter.js';
import type { RateLimiter, RateRule, WeightedRule } from '../src/limits/rate-limit.js';
import { balanceUnits, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** The memory limiter, with its capacity subjects (`cap:`) unreachable: a Redis outage for them. */
class CapacityStoreDown implements RateLimiter {
  private readonly inner = new MemoryRateLimiter();
  private down(subject: string): void {
    if (subject.startsWith('cap:')) throw new TollgateError('store.unavailable', 'rate-limit store unavailable');
  }
  async consume(subject: string, rules: readonly RateRule[], now: number) {
    this.down(subject);
    return this.inner.consume(subject, rules, now);
  }
  peek(subject: string, rules: readonly RateRule[], now: number) {
    return this.inner.peek(subject, rules, now);
  }
  refund(subject: string, rules: readonly RateRule[], consumedAt: number) {
    return this.inner.refund(subject, rules, consumedAt);
  }
  async consumeWeighted(subject: string, rule: WeightedRule, cost: number, now: number) {
    this.down(subject);
    return this.inner.consumeWeighted(subject, rule, cost, now);
  }
  adjustWeighted(subject: string, rule: WeightedRule, entry: string, cost: number) {
    return this.inner.adjustWeighted(subject, rule, entry, cost);
  }
  close() {
    return this.inner.close();
  }
}

const PRICE = { prompt: '0.000001', completion: '0.000002' };

describe('a claim that throws during a stream continuation', () => {
  let gw: TestGateway;
  const limiter = new CapacityStoreDown();
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      rateLimiter: { limiter, store: 'redis' },
      configure: (file) => {
        (file.limits as Record<string, unknown>).capacity = { on_store_error: 'closed' };
        file.models.push({
          id: 'rv/continue',
          name: 'continue',
          context_length: 8192,
          endpoints: [
            // Tried first (cheaper, no capacity limit): breaks after some content.
            {
              provider: 'mock',
              model: 'mock@behavior=drop,breakAfter=3,tps=100',
              pricing: { prompt: '0.0000005', completion: '0.000001' },
              supports_prefill: true,
            },
            // The continuation's endpoint: its capacity cannot be checked (store down, policy closed).
            { provider: 'mock-b', model: 'mock-chat', pricing: PRICE, supports_prefill: true, limits: { rpm: 100 } },
          ],
        } as never);
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await limiter.close();
  });

  it('charges what was streamed and leaves no hold behind', async () => {
    const accountId = await gw.createAccount(5);
    const key = (await gw.createKey(accountId)).key;
    const before = await balanceUnits(gw, accountId);
    const sse = await chatStream(gw, key, {
      model: 'rv/continue',
      messages: [{ role: 'user', content: 'Tell me about the fox' }],
    });
    expect(sse.status).toBe(200);
    const content = sse.events.flatMap((e) => (e.choices ?? []).map((c: any) => c.delta?.content ?? '')).join('');
    expect(content.length).toBeGreaterThan(0); // the first segment reached the caller

    // Give settlement (and any release) a moment.
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The content the caller got is charged.
    expect(await balanceUnits(gw, accountId)).toBeLessThan(before);
    // Nothing of the request is still held.
    expect(await gw.gateway.services.gate.held(accountId)).toBe(0n);
  });
});
