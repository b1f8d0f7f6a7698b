/**
 * An upstream 404 (OpenAI's `model_not_found`, Anthropic's `not_found_error`, Gemini's NOT_FOUND) says
 * the endpoint does not serve the model (retired, renamed, not on the operator's plan) — the caller
 * names our model, never the provider's, so it is not the request's fault: the attempt fails over
 * (docs/api.md §2.2). Regression: classified `bad_request` and passed through as the caller's 404 on
 * POST /chat/completions — which clients read as "no such route" — though a second provider was healthy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICE = { prompt: '0.000001', completion: '0.000002' };

describe('an upstream 404 (model not found at that provider) fails over', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'test/retired-at-a',
          name: 'retired at A',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@status=404,code=model_not_found,message=The%20model%20does%20not%20exist',
              pricing: PRICE,
            },
            { provider: 'mock-b', model: 'mock-chat', pricing: { prompt: '0.000002', completion: '0.000004' } },
          ],
        },
        {
          id: 'test/retired',
          name: 'retired everywhere',
          context_length: 8192,
          endpoints: [{ provider: 'mock', model: 'mock@status=404,code=model_not_found', pricing: PRICE }],
        },
      ],
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(() => gw.close());

  it('the next provider of the same model answers', async () => {
    const r = await chat(gw, key, { model: 'test/retired-at-a', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.provider).toBe('Mock B');
  });

  it('a fallback model in `models` answers', async () => {
    const r = await chat(gw, key, {
      model: 'test/retired',
      models: ['test/chat'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status, r.text).toBe(200);
    // Asked once: an endpoint that does not serve the model is not asked again before the fallback.
    const generation = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(generation.json.data.provider_responses.map((p: { status: number }) => p.status)).toEqual([404, 200]);
    expect(r.json.model).toBe('test/chat');
  });

  it("when no endpoint serves it: a 502 that does not relay the provider's text", async () => {
    const r = await chat(gw, key, { model: 'test/retired', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(502);
    expect(r.json.error.message).toBe('The provider does not serve this model');
    expect(r.json.error.metadata).toMatchObject({ error_type: 'provider_unavailable', raw: null });
  });
});
