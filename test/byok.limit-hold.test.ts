/**
 * A key with `include_byok_in_limit` is charged, per BYOK request, the fee plus the list cost against
 * its limit (README "BYOK"), so admission holds the fee on top of the list cost for a plan that may
 * run on the caller's own key. Regression: it held the list cost only, and concurrent BYOK requests
 * passed the limit by the fee of every request in flight — past the documented bound (key usage ≤
 * limit + (e − 1 unit) + Σ(real − estimate); every real cost here equals its estimate).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { getJson, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { burst, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { sqliteTarget } from './helpers/store-targets.js';

// Every request costs exactly X at list price (10 completion tokens, no prompt price); 300 ms upstream
// latency so the admitted requests are all in flight together.
const MODEL = fixedCostModel('test/byok-fixed', 'mock@latency=300');
const LIMIT_X = 40;

describe('BYOK with include_byok_in_limit: concurrent requests and the key limit', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [MODEL],
      configure: (file) => {
        for (const provider of file.providers) if (provider.id === 'mock') provider.byok = true;
      },
      env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
    });
  });
  afterAll(() => gw.close());

  it(`a burst against a limit worth ${LIMIT_X} list-price requests stays within limit + one hold`, async () => {
    const accountId = await gw.createAccount(1000 * X_USD);
    const manager = (await gw.createKey(accountId, { management: true })).key;
    const byok = await request(`${gw.api}/byok`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'mock', key: 'sk-own-provider-key-1234567890' }),
    });
    expect(byok.statusCode).toBe(201);
    await byok.body.text();
    const { key } = await gw.createKey(accountId, { limit: LIMIT_X * X_USD, include_byok_in_limit: true });

    const result = await burst([gw.url], key, MODEL.id, 300);
    const info = (await getJson(gw, '/key', key)).json.data;
    const limited = toUnits(info.usage) + toUnits(info.byok_usage);
    console.log(
      `[byok limit] admitted ${result.admitted}, statuses ${JSON.stringify([...result.statuses])}, ` +
        `usage ${info.usage}, byok_usage ${info.byok_usage}, counted against the limit ${limited} units ` +
        `(limit ${LIMIT_X * X_UNITS})`,
    );
    expect(result.admitted).toBeGreaterThan(0);
    // Documented bound: the key's limited usage never passes limit + (largest hold − 1 unit).
    expect(limited).toBeLessThanOrEqual(LIMIT_X * X_UNITS + X_UNITS - 1);
  });
});
