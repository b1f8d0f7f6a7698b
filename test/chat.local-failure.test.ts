/**
 * A request the gateway cannot take to the provider (here: a content part nested 5,000 deep, which
 * JSON.stringify would refuse — the body scanner now refuses it while it arrives, before it is even
 * parsed) is the caller's problem, not the provider's: 400, nothing sent upstream, and nothing
 * recorded in the endpoint's health — so it cannot open the circuit breaker that every other account
 * shares.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, parseSse, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** Built as text: the test's own JSON.stringify would overflow on it too. */
function deeplyNestedBody(stream: boolean): string {
  const nested = '['.repeat(5000) + ']'.repeat(5000);
  return `{"model":"test/chat","stream":${stream},"messages":[{"role":"user","content":[{"type":"text","text":"hi","nested":${nested}}]}]}`;
}

async function post(gw: TestGateway, key: string, body: string) {
  const response = await request(`${gw.api}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  const text = await response.body.text();
  return { status: response.statusCode, text, json: text.startsWith('{') ? JSON.parse(text) : null };
}

describe('a request that cannot be serialised for the provider', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => void (file.routing.breaker.failure_threshold = 2),
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('gets 400, reaches no provider, and does not open the breaker for other accounts', async () => {
    const { key } = await gw.createKey(await gw.createAccount(10));
    const upstreamBefore = gw.provider.stats.byModel.get('mock-chat') ?? 0;

    for (const stream of [false, true, false]) {
      const response = await post(gw, key, deeplyNestedBody(stream));
      expect(response.status).toBe(400);
      expect(response.json.error.code).toBe(400);
      expect(response.json.error.message).toBe('JSON body nests deeper than 64 levels');
    }
    expect(gw.provider.stats.byModel.get('mock-chat') ?? 0).toBe(upstreamBefore);

    // Another account is served by the same endpoint: its breaker (threshold 2) is still closed.
    const other = await gw.createKey(await gw.createAccount(10));
    const served = await chat(gw, other.key, { model: 'test/chat', messages: [{ role: 'user', content: 'Hello' }] });
    expect(served.status).toBe(200);
    expect(served.json.choices[0].message.content.length).toBeGreaterThan(0);

    const streamed = await request(`${gw.api}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/chat', stream: true, messages: [{ role: 'user', content: 'Hello' }] }),
    });
    expect(streamed.statusCode).toBe(200);
    expect(parseSse(await streamed.body.text()).done).toBe(true);
  });
});
