/**
 * Null means absent inside the provider preferences too: OpenRouter's schema makes `order`, `only`,
 * `ignore`, `allow_fallbacks`, `sort`, `max_price`, … nullable, and clients generated from it or
 * written with nil pointers send them so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'hi' }];

describe('null provider preferences', () => {
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw.close());

  it('a provider object whose unset preferences are null is served like one without them', async () => {
    const provider = {
      order: null,
      only: null,
      ignore: null,
      allow_fallbacks: null,
      sort: null,
      max_price: null,
      require_parameters: null,
      data_collection: null,
      quantizations: null,
    };
    const r = await chat(gw, key, { model: 'test/chat', messages: MESSAGES, provider });
    expect(r.status, r.text).toBe(200);
  });

  it('one preference set, the others null (as a nil-pointer client sends them)', async () => {
    const r = await chat(gw, key, {
      model: 'test/chat',
      messages: MESSAGES,
      provider: { order: ['mock'], allow_fallbacks: null, sort: null },
    });
    expect(r.status, r.text).toBe(200);
  });

  it('quantizations filters endpoints (one without a declared quantization is unknown); a value OpenRouter does not know is a 400', async () => {
    const unknown = await chat(gw, key, {
      model: 'test/chat',
      messages: MESSAGES,
      provider: { quantizations: ['unknown'] },
    });
    expect(unknown.status, unknown.text).toBe(200);
    const fp4 = await chat(gw, key, { model: 'test/chat', messages: MESSAGES, provider: { quantizations: ['fp4'] } });
    expect(fp4.status, fp4.text).toBe(404);
    expect(fp4.json.error.message).toContain('provider.quantizations');
    const bad = await chat(gw, key, { model: 'test/chat', messages: MESSAGES, provider: { quantizations: ['fp3'] } });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.json.error.message).toContain('provider.quantizations');
  });
});
