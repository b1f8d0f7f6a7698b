/**
 * `tollgate_completions_total` names the provider that served a streamed answer as it does a whole
 * one (an outside check found `provider=""` on every streamed success).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

let gw: TestGateway;
let key: string;

beforeAll(async () => {
  gw = await startTestGateway({ target: sqliteTarget });
  key = (await gw.createKey(await gw.createAccount(5))).key;
});
afterAll(() => gw?.close());

describe('tollgate_completions_total', () => {
  it('labels streamed and whole answers with the provider that served them', async () => {
    const body = { model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] };
    expect((await chat(gw, key, body)).status).toBe(200);
    expect((await chatStream(gw, key, body)).status).toBe(200);
    const text = await (await request(`${gw.url}/metrics`)).body.text();
    const lines = text.split('\n').filter((l) => l.startsWith('tollgate_completions_total{'));
    const served = (streamed: boolean) =>
      lines.find((l) => l.includes('status="200"') && l.includes(`streamed="${streamed}"`));
    const whole = served(false);
    expect(whole).toBeDefined();
    const provider = /provider="([^"]*)"/.exec(whole!)?.[1];
    expect(provider).not.toBe('');
    expect(served(true)).toContain(`provider="${provider}"`);
  });
});
