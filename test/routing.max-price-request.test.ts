/**
 * `provider.max_price.request` (OpenRouter's MaxPrice has it; `@openrouter/sdk` sends it), in USD per
 * request as `/models` lists `pricing.request`, excludes an endpoint whose per-request price is
 * higher — it used to be accepted and ignored, and the caller paid the per-request price under a cap
 * of 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { startRecordingUpstream, type RecordingUpstream } from './helpers/recording-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('max_price and the per-request price', () => {
  let upstream: RecordingUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startRecordingUpstream(); // answers usage 1000 prompt + 500 completion tokens
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        for (const id of ['per-request', 'per-token'])
          file.providers.push({
            id,
            name: id,
            kind: 'openai',
            base_url: upstream.url,
            api_key: `key-${id}`,
            timeouts: {},
          });
        (file.models as unknown[]).push({
          id: 'test/request-priced',
          name: 'request priced',
          context_length: 8192,
          endpoints: [
            // Cheaper per token (tried first), but 0.01 USD per request.
            {
              provider: 'per-request',
              model: 'a',
              pricing: { prompt: '0.000001', completion: '0.000001', request: '0.01' },
            },
            { provider: 'per-token', model: 'b', pricing: { prompt: '0.000002', completion: '0.000002' } },
          ],
        });
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('an endpoint whose per-request price exceeds max_price.request is not used', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    const answer = await chat(gw, key, {
      model: 'test/request-priced',
      messages: [{ role: 'user', content: 'hi' }],
      provider: { max_price: { request: 0 } },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.provider).toBe('per-token');
    // 1500 tokens at 2000 units, no per-request price.
    expect(toUnits(answer.json.usage.cost)).toBe(1500 * 2000);
  });
});
