/**
 * A stream served with the caller's own provider key (BYOK) that breaks mid-answer and is continued
 * on shared capacity is billed per segment — the BYOK segment at the fee, the shared one at list price
 * — and the BYOK segment's list cost is the generation's BYOK usage (`byok_usage*`, and the limit of
 * a key with `include_byok_in_limit`). Regression: `is_byok` and the BYOK counters followed the last
 * segment only, so the own key's list cost escaped the key's limit.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { chatStream, getJson, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MODEL = {
  id: 'test/byok-continue',
  name: 'byok continue',
  context_length: 8192,
  endpoints: [
    {
      provider: 'mock',
      // The first request (the own key's attempt) drops after 3 tokens; later ones answer in full.
      model: 'mock@behavior=drop,breakAfter=3,tps=100,failFirst=1,tokens=8',
      pricing: { prompt: '0.000001', completion: '0.000002' },
      supports_prefill: true,
    },
  ],
};

describe('BYOK segment continued on shared capacity', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [MODEL],
      configure: (file) => {
        for (const provider of file.providers) if (provider.id === 'mock') provider.byok = true;
        (file as { routing: Record<string, unknown> }).routing.mid_stream_continuation = true;
      },
      env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
    });
  });
  afterAll(() => gw.close());

  it('counts the BYOK segment in byok_usage (and so in a limit that includes BYOK)', async () => {
    const accountId = await gw.createAccount(5);
    const manager = (await gw.createKey(accountId, { management: true })).key;
    const byok = await request(`${gw.api}/byok`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'mock', key: 'sk-own-provider-key-1234567890' }),
    });
    expect(byok.statusCode).toBe(201);
    await byok.body.text();
    const { key } = await gw.createKey(accountId, { limit: 1, include_byok_in_limit: true });

    const sse = await chatStream(gw, key, {
      model: MODEL.id,
      messages: [{ role: 'user', content: 'Tell me a story' }],
    });
    expect(sse.status).toBe(200);
    expect(sse.events.some((e) => e.error)).toBe(false); // continued, not cut
    const id = sse.events[0].id as string;
    const generation = (await getJson(gw, `/generation?id=${id}`, key)).json.data;
    const info = (await getJson(gw, '/key', key)).json.data;
    const upstream = toUnits(generation.upstream_inference_cost);
    const cost = toUnits(generation.total_cost);
    console.log(
      `[byok continuation] attempts ${JSON.stringify(generation.provider_responses)} is_byok ${generation.is_byok} ` +
        `total_cost ${cost} upstream ${upstream} key usage ${info.usage} byok_usage ${info.byok_usage}`,
    );
    expect(generation.provider_responses).toHaveLength(2);
    // The account paid less than list price for the whole answer: part of it went over the own key.
    expect(cost).toBeLessThan(upstream);
    // That part's list cost is in byok_usage (README "BYOK": the list-price cost is counted in byok_usage*),
    // and the account paid its fee (5 %, half up) plus the shared segment at list price.
    const byokUsage = toUnits(info.byok_usage);
    expect(byokUsage).toBeGreaterThan(0);
    expect(byokUsage).toBeLessThan(upstream);
    expect(cost).toBe(Math.round((byokUsage * 5) / 100) + (upstream - byokUsage));
    expect(generation.is_byok).toBe(true);
  });
});
