/**
 * In-flight credit holds in one gateway process (docs/api.md, README "Guarantees about money").
 *
 * Stated bound, for a model whose estimate equals its real cost X and a balance of n·X:
 *   admitted ≤ n (no overspend: the final balance is ≥ 0) and admitted ≥ n − 1 (a false refusal
 *   needs a charge settled during a snapshot reload, counted twice until that snapshot expires).
 * With a balance of (n + ½)·X, request n + 1 still sees a positive balance: admitted ≤ n + 1 and the
 * final balance ≥ −X (the overspend is at most one request's estimate).
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../src/core/errors.js';
import { RedisHoldStore } from '../src/billing/redis-hold-store.js';
import type { Store } from '../src/store/types.js';
import { balanceUnits, chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { burst, fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { sqliteTarget } from './helpers/store-targets.js';

const BURST = 500;
const N = 10;
// 100 ms upstream latency: the admitted requests are still in flight while the rest of the burst arrives.
const MODEL = fixedCostModel('test/fixed', 'mock@latency=100');
const FREE = fixedCostModel('test/fixed:free', 'mock-chat');
FREE.endpoints[0]!.pricing = { prompt: '0', completion: '0' };

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('in-flight holds, one process (in-memory hold store)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, extraModels: [MODEL, FREE] });
  });
  afterAll(() => gw.close());

  it(`${BURST} concurrent requests against a balance worth ${N} of them admit ${N} (bound: ${N - 1}..${N}, final balance ≥ 0)`, async () => {
    const accountId = await gw.createAccount(N * X_USD);
    const { key } = await gw.createKey(accountId);
    const result = await burst([gw.url], key, MODEL.id, BURST);
    const balance = await balanceUnits(gw, accountId);
    console.log(
      `[holds] memory: admitted ${result.admitted}/${BURST}, statuses ${JSON.stringify([...result.statuses])}, final balance ${balance} units`,
    );

    expect(result.admitted + (result.statuses.get(402) ?? 0)).toBe(BURST); // nothing but 200 and 402
    expect(result.admitted).toBeLessThanOrEqual(N);
    expect(result.admitted).toBeGreaterThanOrEqual(N - 1);
    expect(result.chargedUnits).toBe(result.admitted * X_UNITS);
    expect(balance).toBe(N * X_UNITS - result.chargedUnits); // every refusal changed nothing
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(await gw.gateway.services.gate.held(accountId)).toBe(0n); // every hold released or settled
    // Again at once, on the same (now stale) balance snapshot: the settled charges are counted.
    expect((await burst([gw.url], key, MODEL.id, 50)).statuses.get(402)).toBe(50);
  });

  it(`with a balance of ${N}.5 requests, one more is admitted and the overspend stays under one request`, async () => {
    const accountId = await gw.createAccount((N + 0.5) * X_USD);
    const { key } = await gw.createKey(accountId);
    const result = await burst([gw.url], key, MODEL.id, BURST);
    const balance = await balanceUnits(gw, accountId);
    console.log(`[holds] memory, ${N}.5 X: admitted ${result.admitted}, final balance ${balance} units`);
    expect(result.admitted).toBeLessThanOrEqual(N + 1);
    expect(result.admitted).toBeGreaterThanOrEqual(N);
    expect(balance).toBeGreaterThanOrEqual(-X_UNITS);
    expect(balance).toBe((N + 0.5) * X_UNITS - result.admitted * X_UNITS);
  });

  it('a refusal for what requests in flight hold says so (GET /credits still shows a positive balance)', async () => {
    const accountId = await gw.createAccount(X_USD);
    const { key } = await gw.createKey(accountId);
    const first = chat(gw, key, fixedBody(MODEL.id, 0));
    await expect.poll(() => gw.gateway.services.gate.held(accountId), { interval: 5 }).toBeGreaterThan(0n);
    const second = await chat(gw, key, fixedBody(MODEL.id, 1));
    expect(second.status).toBe(402);
    expect(second.json.error.message).toBe(
      `Insufficient credits: the account balance is ${X_USD} USD and requests in flight hold ${X_USD} USD; paid models need a positive balance beyond what is held. Retry when they finish, or add credits.`,
    );
    expect((await first).status).toBe(200);

    const rich = await gw.createAccount(100 * X_USD);
    const limited = await gw.createKey(rich, { limit: X_USD });
    const inFlight = chat(gw, limited.key, fixedBody(MODEL.id, 2));
    await expect.poll(() => gw.gateway.services.gate.held(rich), { interval: 5 }).toBeGreaterThan(0n);
    const refused = await chat(gw, limited.key, fixedBody(MODEL.id, 3));
    expect(refused.status).toBe(402);
    expect(refused.json.error.message).toBe(
      `Key limit exceeded (total limit): requests in flight hold ${X_USD} USD; retry when they finish`,
    );
    expect((await inFlight).status).toBe(200);
  });

  it('a key limit holds the same way: the key admits what its limit allows, the account keeps the rest', async () => {
    const accountId = await gw.createAccount(100 * X_USD);
    const { key } = await gw.createKey(accountId, { limit: 3 * X_USD });
    const result = await burst([gw.url], key, MODEL.id, 100);
    expect(result.admitted).toBe(3);
    expect(await balanceUnits(gw, accountId)).toBe(97 * X_UNITS);
  });
});

describe('fail closed', () => {
  it('hold store (Redis) unreachable: a paid request gets 503 and the provider sees nothing; a free one is served', async () => {
    const holds = new RedisHoldStore({ url: `redis://127.0.0.1:${await closedPort()}`, timeoutMs: 300 });
    const gw = await startTestGateway({ target: sqliteTarget, extraModels: [MODEL, FREE], holds });
    try {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId);
      const before = gw.provider.stats.requests;
      const paid = await chat(gw, key, fixedBody(MODEL.id, 0));
      expect(paid.status, paid.text).toBe(503);
      expect(paid.json.error.message).toMatch(/unavailable/i);
      expect(gw.provider.stats.requests).toBe(before);
      // Free requests hold nothing: checked against the balance snapshot alone (the free-model rate limit decides on its own store).
      const free = await chat(gw, key, fixedBody(FREE.id, 1));
      expect(free.status, free.text).toBe(200);
      expect(await balanceUnits(gw, accountId)).toBe(1_000_000_000);
    } finally {
      await gw.close();
      await holds.close();
    }
  });

  it('database unreachable once the snapshot expired: paid and free requests get 503, nothing forwarded', async () => {
    let broken = false;
    const failing = (store: Store): Store =>
      new Proxy(store, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (broken && (property === 'getAccount' || property === 'getKeyUsage'))
              return Promise.reject(new TollgateError('store.unavailable', 'Storage is unavailable'));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [MODEL, FREE],
      wrapStore: failing,
      configure: (file) => Object.assign(file, { cache: { balance_ttl_ms: 100 } }),
    });
    try {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId, { limit: 1 });
      expect((await chat(gw, key, fixedBody(MODEL.id, 0))).status).toBe(200); // key and snapshots cached
      broken = true;
      await new Promise((resolve) => setTimeout(resolve, 150)); // the balance snapshot expires
      const before = gw.provider.stats.requests;
      const paid = await chat(gw, key, fixedBody(MODEL.id, 1));
      expect(paid.status, paid.text).toBe(503);
      const free = await chat(gw, key, fixedBody(FREE.id, 2));
      expect(free.status, free.text).toBe(503);
      expect(gw.provider.stats.requests).toBe(before);
      broken = false;
      expect((await chat(gw, key, fixedBody(MODEL.id, 3))).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
