/**
 * `provider` preferences as OpenRouter callers send them.
 *
 * 1. Provider names: `order` / `only` / `ignore` match a provider's id or display name in any case —
 *    callers written for OpenRouter spell providers as displayed ("Anthropic", "Together"). Regression:
 *    the exact slug only, so `only: ["MOCK-B"]` was a 503 and `ignore: ["Mock"]` silently did nothing.
 * 2. `data_collection: "deny"` / `zdr: true` filter endpoints on their declared data policy; an
 *    undeclared policy never meets them. Regression: validated (or unknown) and ignored, answered 200 by
 *    any provider as if the caller's requirement had been met.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICE = { prompt: '0.000001', completion: '0.000002' };

describe('provider preferences', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'test/two',
          name: 'two providers',
          context_length: 8192,
          endpoints: [
            { provider: 'mock', model: 'mock-chat', pricing: PRICE },
            { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
          ],
        },
      ],
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(() => gw.close());

  const ask = (provider: Record<string, unknown>) =>
    chat(gw, key, { model: 'test/two', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }], provider });

  it('only: a slug in another case still selects that provider', async () => {
    const r = await ask({ only: ['MOCK-B'] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock B');
  });

  it('ignore: a provider named as displayed ("Mock") is excluded', async () => {
    // Without preferences the cheaper "Mock" serves; ignoring it must leave "Mock B".
    const r = await ask({ ignore: ['Mock'] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock B');
  });

  it('data_collection: "deny" is not answered as if it were met by providers with no declared policy', async () => {
    const r = await ask({ data_collection: 'deny' });
    expect(r.status, `served by ${r.json?.provider}`).not.toBe(200);
  });

  it('zdr: true is not answered as if it were met by providers with no declared policy', async () => {
    const r = await ask({ zdr: true });
    expect(r.status, `served by ${r.json?.provider}`).not.toBe(200);
  });
});
