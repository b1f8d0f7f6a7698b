/**
 * A streamed request refused before its stream started is answered past Fastify (the reply is
 * hijacked), so Fastify's onSend hook does not add its headers: the route sets them itself. Its
 * error answer carries `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` like the same
 * answer to a non-streamed request (README "Connections, responses and operator surfaces"), and a
 * stream carries nosniff too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('answers to streamed requests, before and after the stream starts', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw?.close());

  const post = async (body: unknown) => {
    const r = await request(`${gw.api}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.statusCode, headers: r.headers as Record<string, string>, text: await r.body.text() };
  };

  it('an invalid body with stream: true → 400 with nosniff and no-store, like the same body without stream', async () => {
    const bad = { model: 'test/chat', messages: [] };
    const plain = await post(bad);
    expectError(plain, 400);
    expect(plain.headers['x-content-type-options']).toBe('nosniff');
    expect(plain.headers['cache-control']).toBe('no-store');

    const streamed = await post({ ...bad, stream: true });
    expectError(streamed, 400);
    expect(streamed.headers['x-content-type-options']).toBe('nosniff');
    expect(streamed.headers['cache-control']).toBe('no-store');
  });

  it('a stream carries nosniff and no-store, as every authenticated answer', async () => {
    const streamed = await post({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(streamed.headers['x-content-type-options']).toBe('nosniff');
    expect(streamed.headers['cache-control']).toBe('no-store');
  });
});
