/**
 * A request for a paid model that lists a `:free` model as a fallback in `models` is not under the
 * free-model limits while its paid model serves: the slot is taken just before the first free
 * attempt. Regression: every free model in the plan took a slot up front, so paid answers used up the
 * account's free quota, and once it was spent the paid model — which has no platform request cap —
 * was refused with the free-model 429. And the other way round: an account that cannot pay is served
 * by the request's free models (a free model with a paid fallback was a 402).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('a :free fallback does not put the paid model under free-model limits', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  const body = {
    model: 'test/chat',
    models: ['test/chat:free'],
    max_tokens: 2,
    messages: [{ role: 'user', content: 'hi' }],
  };

  it('a paid request served by the paid model counts no free-model request', async () => {
    const key = (await gw.createKey(await gw.createAccount(10))).key;
    const r = await chat(gw, key, body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
    const info = await getJson(gw, '/key', key);
    expect(info.json.data.free_model_daily_requests.used).toBe(0);
  });

  it('is served by the paid model after the free per-minute quota is spent', async () => {
    const key = (await gw.createKey(await gw.createAccount(10))).key;
    for (let i = 0; i < 20; i++) {
      const free = await chat(gw, key, {
        model: 'test/chat:free',
        max_tokens: 2,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(free.status, free.text).toBe(200);
    }
    const r = await chat(gw, key, body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('test/chat');
  });

  it("an account that cannot pay is served by the request's free models (paid ones need a positive balance)", async () => {
    const key = (await gw.createKey(await gw.createAccount(0))).key;
    const messages = [{ role: 'user', content: 'hi' }];
    const freeFirst = await chat(gw, key, { model: 'test/chat:free', models: ['test/chat'], max_tokens: 2, messages });
    expect(freeFirst.status, freeFirst.text).toBe(200);
    expect(freeFirst.json.model).toBe('test/chat:free');
    const paidFirst = await chat(gw, key, body);
    expect(paidFirst.status, paidFirst.text).toBe(200);
    expect(paidFirst.json.model).toBe('test/chat:free');
    const paidOnly = await chat(gw, key, { model: 'test/chat', max_tokens: 2, messages });
    expect(paidOnly.status).toBe(402);
  });
});
