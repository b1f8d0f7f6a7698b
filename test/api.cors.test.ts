import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('CORS (browser callers)', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    key = (await gw.createKey(await gw.createAccount(1))).key;
  });
  afterAll(() => gw.close());

  it('answers a preflight before authentication', async () => {
    const response = await request(`${gw.api}/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    await response.body.dump();
    expect(response.statusCode).toBe(204);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(String(response.headers['access-control-allow-methods'])).toContain('POST');
    expect(String(response.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
  });

  it('lets a browser read the answer and the generation id', async () => {
    const answer = await chat(
      gw,
      key,
      { model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] },
      { origin: 'https://app.example' },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    expect(String(answer.headers['access-control-expose-headers']).toLowerCase()).toContain('x-generation-id');
    const refused = await chat(
      gw,
      'sk-tg-v1-bad',
      { model: 'test/chat', messages: [] },
      { origin: 'https://app.example' },
    );
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
  });
});

describe('CORS on streams', () => {
  it('carries the CORS and generation headers on a hijacked SSE response and on its early errors', async () => {
    const gw = await startTestGateway({ target: sqliteTarget });
    try {
      const key = (await gw.createKey(await gw.createAccount(1))).key;
      for (const model of ['test/chat', 'test/bad-request']) {
        const response = await request(`${gw.api}/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            origin: 'https://app.example',
          },
          body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        });
        await response.body.dump();
        expect(response.headers['access-control-allow-origin'], model).toBe('*');
        expect(String(response.headers['x-generation-id']), model).toMatch(/^gen-/);
      }
    } finally {
      await gw.close();
    }
  });
});
