/**
 * An error message that quotes the caller's input never sends a key back, and stays short: a key
 * pasted where an id or a model name goes was echoed whole ("Generation sk-tg-v1-… not found",
 * "sk-tg-v1-… is not a valid model ID", also on the unauthenticated /models routes), and a 100 KB
 * model name came back whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('input echoed in error messages', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw?.close());

  it('a key where an id or a model goes is not sent back', async () => {
    const answers = [
      await getJson(gw, `/generation?id=${key}`, key),
      await getJson(gw, `/models/${key}/x/endpoints`),
      await chat(gw, key, { model: key, messages: [{ role: 'user', content: 'hi' }] }),
      await chatStream(gw, key, { model: `openai/${key}`, messages: [{ role: 'user', content: 'hi' }] }),
    ];
    for (const answer of answers) {
      const text = 'raw' in answer ? answer.raw : JSON.stringify(answer.json);
      expect(answer.status, text).toBeGreaterThanOrEqual(400);
      expect(text).not.toContain(key.slice(9));
      expect(text).toContain('[redacted]');
    }
  });

  it("the error's metadata quotes input the same way: keys redacted, each text cut short", async () => {
    const manager = await gw.createKey(await gw.createAccount(5), { management: true });
    const created = await call(gw, 'POST', '/keys', {
      key: manager.key,
      json: {
        name: 'k',
        allowed_models: [key, ...Array.from({ length: 5 }, (_, i) => `a/${String(i).repeat(3_000)}`)],
      },
    });
    expect(created.status, created.text).toBe(400);
    expect(created.text).not.toContain(key.slice(9));
    expect(created.json.error.metadata.unknown[0]).toBe('[redacted]');
    expect(created.text.length).toBeLessThan(7_000); // 15,000 characters of names, each quoted in part
  });

  it('a long input is quoted in part', async () => {
    const r = await chat(gw, key, { model: `a/${'x'.repeat(100_000)}`, messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(400);
    expect(r.json.error.message.length).toBeLessThanOrEqual(1001);
  });
});
