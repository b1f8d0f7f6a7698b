/**
 * Issue 8, finding 6: an upstream that echoes its `Authorization` header leaked the operator's
 * provider key into 400, 429 and 502 bodies (`message`, `metadata.raw`), the in-stream error chunk
 * and the warn log. Every upstream text is now scrubbed of configured and BYOK keys and of
 * bearer / `sk-` / Google-key shaped secrets; `raw` is not relayed for 5xx. An outside check later
 * found the credentials in a provider's extra `headers` (Azure's `api-key`) relayed in clear.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from './helpers/echo-upstream.js';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const OPERATOR_KEY = 'operator-echo-provider-key-0001';
const OWN_KEY = 'own-byok-echo-key-0002';
const HEADER_KEY = 'azure-style-header-key-0004';
const HEADER_TOKEN = 'gateway-scheme-token-0005';
const SECRETS = [
  OPERATOR_KEY,
  OWN_KEY,
  HEADER_KEY,
  HEADER_TOKEN,
  'sk-live-0123456789abcdef',
  'AIzaSyA1234567890abcdefghijklmnop',
];
const PRICES = { prompt: '0.000001', completion: '0.000002' };
const MESSAGES = [{ role: 'user', content: 'hi' }];

function expectNoSecret(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

describe('no secret echoed from upstream errors', () => {
  let echo: EchoUpstream;
  let gw: TestGateway;
  let key: string;
  let logs = '';

  beforeAll(async () => {
    echo = await startEchoUpstream();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    });
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
      logger: pino({ level: 'debug' }, sink),
      configure: (file) => {
        file.providers.push(
          { id: 'echo', name: 'Echo', kind: 'openai', base_url: echo.url, api_key: OPERATOR_KEY, timeouts: {} },
          {
            id: 'echo-headers',
            name: 'Echo headers',
            kind: 'openai',
            base_url: echo.url,
            api_key: '',
            headers: { 'api-key': HEADER_KEY, 'x-gateway-auth': `Token ${HEADER_TOKEN}`, 'x-org': 'acme' },
            timeouts: {},
          },
          {
            id: 'echo-own',
            name: 'Echo own',
            kind: 'openai',
            base_url: echo.url,
            api_key: 'operator-echo-own-key-0003',
            byok: true,
            timeouts: {},
          },
        );
        for (const name of ['echo-400', 'echo-429', 'echo-502', 'echo-stream']) {
          file.models.push({
            id: `test/${name}`,
            name,
            context_length: 8192,
            endpoints: [{ provider: 'echo', model: name, pricing: PRICES }],
          });
        }
        file.models.push({
          id: 'test/echo-headers-400',
          name: 'headers',
          context_length: 8192,
          endpoints: [{ provider: 'echo-headers', model: 'echo-400', pricing: PRICES }],
        });
        file.models.push({
          id: 'test/echo-own-400',
          name: 'own',
          context_length: 8192,
          endpoints: [{ provider: 'echo-own', model: 'echo-400', pricing: PRICES }],
        });
      },
    });
    const accountId = await gw.createAccount(1);
    key = (await gw.createKey(accountId)).key;
    const manager = (await gw.createKey(accountId, { management: true })).key;
    const created = await request(`${gw.api}/byok`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'echo-own', key: OWN_KEY, is_required: true }),
    });
    expect(created.statusCode).toBe(201);
    await created.body.dump();
  });
  afterAll(async () => {
    await gw.close();
    await echo.close();
  });

  it.each([
    ['test/echo-400', 400],
    ['test/echo-429', 429],
    ['test/echo-502', 502],
    ['test/echo-stream', 502],
    ['test/echo-own-400', 400],
    ['test/echo-headers-400', 400],
  ])('%s: the error body carries no key (status %i)', async (model, status) => {
    const answer = await chat(gw, key, { model, messages: MESSAGES });
    expect(answer.status, answer.text).toBe(status);
    expectNoSecret(answer.text);
    // The error is still useful: the upstream's words (message, or raw for a 429), with the secret
    // replaced — except a server error's, which say only its HTTP status (a server's internals), or
    // "server error" for an error event inside a 200 stream (no HTTP 5xx was sent; docs/api.md §10).
    if (status >= 500)
      expect(answer.json.error.message).toBe(
        model === 'test/echo-stream'
          ? 'Provider returned error: server error'
          : `Provider returned error: HTTP ${status}`,
      );
    else expect(answer.text).toContain('[redacted]');
    if (status >= 500) expect(answer.json.error.metadata.raw).toBeNull();
    if (status === 400) expect(JSON.stringify(answer.json.error.metadata.raw)).toContain('[redacted]');

    const streamed = await chatStream(gw, key, { model, messages: MESSAGES });
    expectNoSecret(streamed.raw);
  });

  it('the in-stream error chunk after content carries no key', async () => {
    const streamed = await chatStream(gw, key, { model: 'test/echo-stream', messages: MESSAGES });
    expect(streamed.status).toBe(200);
    const failed = streamed.events.find((e) => e.error);
    // Failover was impossible after content: the caller got the in-band error — a server error's,
    // so its status only, never the provider's text.
    expect(failed?.choices[0].finish_reason).toBe('error');
    expect(failed.error.message).toMatch(/^Provider returned error: (HTTP 5\d\d|server error)$/);
    expectNoSecret(streamed.raw);
  });

  it('the logs carry no key', () => {
    expect(logs.length).toBeGreaterThan(0);
    expectNoSecret(logs);
  });
});
