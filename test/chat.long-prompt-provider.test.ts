/**
 * The simulated provider (the demo's, running inside the gateway's own process on `npm start`)
 * counts a prompt in bounded time, as the gateway's estimate does: a 1 MB prompt without spaces —
 * well under the body limit — used to block the process (every route, /healthz included) for
 * minutes while the tokenizer ran over it whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('a long prompt without spaces through the in-process simulated provider', () => {
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      // The default body limit (4 MiB), not the test catalog's smaller one.
      configure: (file) => Object.assign(file.server, { body_limit_bytes: 4 * 1024 * 1024 }),
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('is answered', async () => {
    const text = 'a'.repeat(1_000_000);
    const r = await chat(gw, key, { model: 'test/chat', messages: [{ role: 'user', content: text }] });
    expect(r.status, r.text.slice(0, 500)).toBe(200);
    expect(r.json.usage.prompt_tokens).toBeGreaterThan(0);
  });
});
