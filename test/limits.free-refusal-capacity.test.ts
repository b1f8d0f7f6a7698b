/**
 * A free-model slot refused in the execute loop after the endpoint's capacity was claimed undoes the
 * claim entirely (`RequestCapacity.withdraw`): the attempt is never sent, so it uses none of the free
 * endpoint's `rpm`. Regression: the claim kept the request counted, and one account retrying past its
 * free-model quota starved every other account of that endpoint (capacity 429s with no upstream call).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const FREE = { prompt: '0', completion: '0' };
const HELLO = [{ role: 'user', content: 'Hello' }];

describe('a refused free-model slot does not spend the free endpoint capacity', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'cap/solo:free',
          name: 'free with capacity',
          context_length: 8192,
          endpoints: [{ provider: 'mock', model: 'cap-free-solo', pricing: FREE, limits: { rpm: 3 } }],
        },
      ],
      configure: (file) => {
        (file.limits as Record<string, unknown>).free_models = { per_minute: 1 };
      },
    });
  });
  afterAll(() => gw.close());

  it("an account over its free-model quota does not use the endpoint's rpm", async () => {
    const greedy = (await gw.createKey(await gw.createAccount(10))).key;
    const first = await chat(gw, greedy, { model: 'cap/solo:free', max_tokens: 2, messages: HELLO });
    expect(first.status, first.text).toBe(200);
    // Over the per-minute free quota: refused with the free-model 429, nothing sent upstream.
    for (let i = 0; i < 2; i++) {
      const refused = await chat(gw, greedy, { model: 'cap/solo:free', max_tokens: 2, messages: HELLO });
      expect(refused.status).toBe(429);
      expect(refused.json.error.metadata.limit_source).toBe('free_model_per_minute');
    }
    expect(gw.provider.stats.byModel.get('cap-free-solo') ?? 0).toBe(1);

    // One upstream call so far, rpm 3: another account still has two requests of the minute.
    const other = (await gw.createKey(await gw.createAccount(10))).key;
    const served = await chat(gw, other, { model: 'cap/solo:free', max_tokens: 2, messages: HELLO });
    expect(served.status, served.text).toBe(200);
  });
});
