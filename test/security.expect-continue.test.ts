/**
 * `Expect: 100-continue` is answered only after authentication: Node's default sent `100 Continue`
 * as soon as the headers arrived, inviting the body of a request about to be refused (an
 * unauthenticated caller was asked to upload its 4 MiB). Now a refused request gets its final status
 * without `100 Continue` and the connection closes; an accepted one gets `100 Continue`, then its
 * answer. Any other expectation is a 417 in the error record (Node's was a bare 417).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { jsonBodyOf, rawExchange } from './helpers/raw-http.js';
import { sqliteTarget } from './helpers/store-targets.js';

const BODY = JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] });

describe('Expect: 100-continue', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw.close());

  /** Sends the head only; the body goes out only after `100 Continue`. */
  async function exchange(headers: Record<string, string>, path = '/api/v1/chat/completions') {
    const conn = await rawExchange(gw.url);
    const head = Object.entries({
      host: '127.0.0.1',
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(BODY)),
      ...headers,
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    await conn.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
    const first = await conn.status;
    return { conn, first };
  }

  it('a valid key is asked for its body, then answered', async () => {
    const { conn, first } = await exchange({ authorization: `Bearer ${key}`, expect: '100-continue' });
    expect(first).toBe(100);
    await conn.write(BODY);
    await expect.poll(() => /HTTP\/1\.1 200 /.test(conn.received())).toBe(true);
    conn.socket.destroy();
  });

  for (const [name, authorization] of [
    ['no key', null],
    ['an unknown key', 'Bearer sk-tg-v1-00000000000000000000000000000000000000000000000000000000000000000000'],
  ] as const) {
    it(`${name}: 401 without 100 Continue, and the connection closes (the body is never asked for)`, async () => {
      const { conn, first } = await exchange({
        expect: '100-continue',
        ...(authorization === null ? {} : { authorization }),
      });
      expect(first).toBe(401);
      await conn.closed;
      expect(conn.received()).not.toContain('100 Continue');
      expect(jsonBodyOf(conn.received()).error.code).toBe(401);
    });
  }

  it('a body over the route limit is refused (413) without 100 Continue', async () => {
    const { conn, first } = await exchange({
      authorization: `Bearer ${key}`,
      expect: '100-continue',
      'content-length': String(1024 * 1024 * 1024),
    });
    expect(first).toBe(413);
    await conn.closed;
    expect(conn.received()).not.toContain('100 Continue');
  });

  it('a body of another type is asked for too (no wait for the client to give up on 100 Continue)', async () => {
    const { conn, first } = await exchange({
      authorization: `Bearer ${key}`,
      expect: '100-continue',
      'content-type': 'text/plain',
    });
    expect(first).toBe(100);
    await conn.write(BODY);
    await expect.poll(() => /HTTP\/1\.1 4\d\d /.test(conn.received().replace('HTTP/1.1 100 Continue', ''))).toBe(true);
    conn.socket.destroy();
  });

  it('another expectation gets a 417 in the error record', async () => {
    const { conn, first } = await exchange({ authorization: `Bearer ${key}`, expect: 'something-else' });
    expect(first).toBe(417);
    await conn.closed;
    expect(jsonBodyOf(conn.received()).error).toEqual({
      code: 417,
      message: 'Only "Expect: 100-continue" is supported',
    });
  });
});
