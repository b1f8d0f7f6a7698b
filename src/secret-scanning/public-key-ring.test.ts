import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublicKeyRing } from './public-key-ring.js';

const pem = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
const silent = pino({ level: 'silent' });

describe('secret-scanning public keys', () => {
  const served = { public_keys: [{ key_identifier: 'served-1', key: pem(), is_current: true }] };
  let requests = 0;
  let status = 200;
  let url = '';
  const server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(status === 200 ? JSON.stringify(served) : '{}');
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('finds configured keys without fetching', async () => {
    const ring = new PublicKeyRing(
      { public_keys: [{ key_identifier: 'a', key: pem() }], keys_url: null, keys_refresh_ms: 1000 },
      Date.now,
      silent,
    );
    expect(await ring.find('a')).not.toBeNull();
    expect(await ring.find('b')).toBeNull();
  });

  it('fetches keys_url, caches it, refetches an unknown identifier at most once a minute and after keys_refresh_ms', async () => {
    let now = 1_000_000;
    const ring = new PublicKeyRing({ public_keys: [], keys_url: url, keys_refresh_ms: 3_600_000 }, () => now, silent);
    expect(await ring.find('served-1')).not.toBeNull();
    expect(requests).toBe(1);
    expect(await ring.find('served-1')).not.toBeNull();
    expect(await ring.find('unknown')).toBeNull();
    expect(await ring.find('unknown')).toBeNull();
    expect(requests).toBe(1);
    now += 61_000;
    served.public_keys.push({ key_identifier: 'served-2', key: pem(), is_current: true });
    expect(await ring.find('served-2')).not.toBeNull();
    expect(requests).toBe(2);
    // The host answering an error keeps the keys we had.
    status = 500;
    now += 3_600_001;
    expect(await ring.find('served-1')).not.toBeNull();
    expect(requests).toBe(3);
    status = 200;
  });
});
