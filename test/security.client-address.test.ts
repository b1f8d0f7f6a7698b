/**
 * Issue 8, finding 5: behind a proxy the client's address is the one the trusted proxy saw — the
 * right-most X-Forwarded-For entry not added by a trusted proxy — never the caller-chosen left-most
 * one. A spoofed X-Forwarded-For must not escape the per-address edge limit, and the request log
 * records the same address the guard used.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.close();
});

async function gatewayTrusting(trust: unknown, logLines?: string[]): Promise<TestGateway> {
  const logger = logLines
    ? pino(
        { level: 'info' },
        new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(chunk.toString()), done()) }),
      )
    : undefined;
  const gw = await startTestGateway({
    target: sqliteTarget,
    ...(logger ? { logger } : {}),
    configure: (file) => {
      Object.assign(file.limits, { edge: { burst: 3, per_second: 0.01 } });
      (file.server as Record<string, unknown>).trust_proxy = trust;
    },
  });
  gateways.push(gw);
  return gw;
}

const get = (gw: TestGateway, forwardedFor: string) =>
  request(`${gw.api}/models`, { headers: { 'x-forwarded-for': forwardedFor } }).then(
    async (r) => (await r.body.dump(), r.statusCode),
  );

describe('client address behind a trusted proxy', () => {
  it('trust_proxy: true means one proxy: a different left-most entry per request does not escape the limit', async () => {
    const lines: string[] = [];
    const gw = await gatewayTrusting(true, lines);
    const statuses = [];
    // The proxy (this test, on 127.0.0.1) appended the address it saw: 203.0.113.1. The caller chose the rest.
    for (let i = 1; i <= 4; i++) statuses.push(await get(gw, `198.51.100.${i}, 10.0.0.${i}, 203.0.113.1`));
    expect(statuses).toEqual([200, 200, 200, 429]);
    // Another client, as seen by the proxy, has its own bucket.
    expect(await get(gw, '198.51.100.1, 203.0.113.2')).toBe(200);
    // The logs name the address the guard used, never the spoofed one.
    const addresses = lines
      .map((line) => JSON.parse(line) as { req?: { remoteAddress?: string } })
      .flatMap((entry) => (entry.req?.remoteAddress ? [entry.req.remoteAddress] : []));
    expect(addresses).toContain('203.0.113.1');
    expect(addresses.filter((a) => a.startsWith('198.51.100.') || a.startsWith('10.0.0.'))).toEqual([]);
  });

  it('a hop count trusts that many proxies, counted from the socket', async () => {
    const gw = await gatewayTrusting(2);
    const statuses = [];
    for (let i = 1; i <= 4; i++) statuses.push(await get(gw, `198.51.100.${i}, 203.0.113.7, 10.1.1.1`));
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('a list of proxy networks: the client is the right-most address outside them', async () => {
    const gw = await gatewayTrusting(['127.0.0.1/32', '10.0.0.0/8']);
    const statuses = [];
    // Two internal proxies (10.x) between the edge proxy and us; the caller prepends junk.
    for (let i = 1; i <= 4; i++) statuses.push(await get(gw, `198.51.100.${i}, 203.0.113.9, 10.2.3.4, 10.5.6.7`));
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(await get(gw, '203.0.113.10, 10.2.3.4')).toBe(200);
  });

  it('without trust_proxy, X-Forwarded-For is ignored: the socket address is the client', async () => {
    const gw = await gatewayTrusting(false);
    const statuses = [];
    for (let i = 1; i <= 4; i++) statuses.push(await get(gw, `203.0.113.${i}`));
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
