/**
 * Answers Node's HTTP parser makes us give below the framework (http/edge.ts, `clientErrorHandler`):
 * a malformed request (400) and headers past the limit (431) come in the error record with the
 * headers every other answer has (outside check: `X-Content-Type-Options: nosniff` was missing).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(request));
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('answers below the framework', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  it.each([
    ['a malformed request line', 'NOT HTTP AT ALL\r\n\r\n', 400],
    [
      'headers past the limit',
      `GET /api/v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
      431,
    ],
  ])('%s: the error record, nosniff and no-store', async (_what, request, status) => {
    const answer = await rawExchange(gw.url, request);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
    expect(head).toMatch(/\r\nCache-Control: no-store\r\n/i);
    expect(JSON.parse(body!).error.code).toBe(status);
  });
});
