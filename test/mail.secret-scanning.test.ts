/**
 * End to end over real sockets: a code host's signed secret-scanning report disables a live key and
 * its holder receives exactly one message (named by label, never the key) on a real SMTP server on
 * loopback; an unsigned or badly signed report changes nothing.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, HELLO } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { ROOT } from './helpers/process.js';
import { capturedLogger } from './helpers/log-capture.js';
import { startInbox, type Inbox } from './helpers/smtp-inbox.js';
import { sqliteTarget } from './helpers/store-targets.js';

const KEY_ID = 'test-key-1';
const REPORT_URL = 'https://github.com/acme/app/blob/main/.env';

function keyPair(): { privateKey: KeyObject; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

const signer = keyPair();
const stranger = keyPair();

async function report(
  gw: TestGateway,
  entries: unknown,
  options: { key?: KeyObject; id?: string | null; signature?: string } = {},
) {
  const body = JSON.stringify(entries);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.id !== null) headers['github-public-key-identifier'] = options.id ?? KEY_ID;
  headers['github-public-key-signature'] =
    options.signature ??
    sign('sha256', Buffer.from(body), { key: options.key ?? signer.privateKey, dsaEncoding: 'der' }).toString('base64');
  return call(gw, 'POST', '/secret-scanning/verify', { raw: body, headers });
}

/** Waits until the outbox has nothing left to send, then a few sender polls more. */
async function settleOutbox(gw: TestGateway): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const pending = await gw.admin('GET', '/outbox');
    if (pending.json.data.length === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 300));
}

describe('secret-scanning reports and exposed-key mail', () => {
  let inbox: Inbox;
  let gw: TestGateway;
  const log = capturedLogger();

  beforeAll(async () => {
    inbox = await startInbox();
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_SMTP_URL: inbox.url },
      logger: log.logger,
      configure: (file) => {
        const f = file as Record<string, unknown>;
        f.mail = {
          from: 'Tollgate <noreply@tollgate.test>',
          poll_interval_ms: 100,
          retry_base_ms: 100,
          retry_max_ms: 400,
        };
        f.secret_scanning = { public_keys: [{ key_identifier: KEY_ID, key: signer.publicPem }] };
      },
    });
    gw.gateway.startBackground();
  });

  afterAll(async () => {
    await gw?.close();
    await inbox?.close();
  });

  it('a signed report disables a live key (401 next), mails its holder once, and answers in report order', async () => {
    const account = await gw.createAccount(5);
    const victim = await gw.createKey(account, { name: 'ci deploy' });
    const deleted = await gw.createKey(account, { name: 'old' });
    expect((await gw.admin('DELETE', `/keys/${deleted.hash}`)).status).toBe(200);
    expect((await chat(gw, victim.key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    const before = inbox.messages.length;

    const lookAlike = `sk-tg-v1-${'0'.repeat(64)}`;
    const entries = [
      { token: victim.key, type: 'tollgate_api_key', url: REPORT_URL, source: 'content' },
      { token: lookAlike, type: 'tollgate_api_key', url: REPORT_URL, source: 'content' },
      { token: deleted.key, type: 'tollgate_api_key', url: REPORT_URL, source: 'commit' },
      { token: 'not a key', type: 'tollgate_api_key', url: REPORT_URL, source: 'content' },
    ];
    const answer = await report(gw, entries);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual([
      { token_raw: victim.key, token_type: 'tollgate_api_key', label: 'true_positive' },
      { token_raw: lookAlike, token_type: 'tollgate_api_key', label: 'false_positive' },
      { token_raw: deleted.key, token_type: 'tollgate_api_key', label: 'false_positive' },
      { token_raw: 'not a key', token_type: 'tollgate_api_key', label: 'false_positive' },
    ]);

    expectError(await chat(gw, victim.key, { model: 'test/chat', messages: HELLO }), 401);
    const key = await gw.admin('GET', `/accounts/${account}/keys`);
    const row = key.json.data.find((k: { hash: string }) => k.hash === victim.hash);
    expect(row.disabled).toBe(true);
    // Never re-enabled.
    expect((await gw.admin('PATCH', `/keys/${victim.hash}`, { disabled: false })).status).toBe(409);

    const [mail] = (await inbox.waitFor(before + 1)).slice(before);
    const label = `sk-tg-v1-${victim.key.slice(9, 12)}...${victim.key.slice(-3)}`;
    expect(mail!.to).toHaveLength(1);
    expect(mail!.subject).toContain(label);
    expect(mail!.decoded).toContain('"ci deploy"');
    expect(mail!.decoded).toContain(label);
    expect(mail!.decoded).toContain(REPORT_URL);
    expect(mail!.decoded).toContain('Found in: content');
    expect(mail!.decoded).toMatch(/Delete this key and create a new one/);
    expect(mail!.raw).not.toContain(victim.key.slice(9));
    expect(mail!.decoded).not.toContain(victim.key.slice(9));
    expect(mail!.messageId).toMatch(/^<mail_[0-9a-f]{32}@tollgate\.test>$/);
    expect(mail!.raw).toMatch(/Content-Type: text\/html/i);

    // Reported again: still a true positive, and no second message.
    const again = await report(gw, [entries[0]]);
    expect(again.json).toEqual([{ token_raw: victim.key, token_type: 'tollgate_api_key', label: 'true_positive' }]);
    await settleOutbox(gw);
    expect(inbox.messages.length).toBe(before + 1);
  });

  it('missing, unknown or invalid signatures → 401 and nothing changes', async () => {
    const account = await gw.createAccount(5);
    const live = await gw.createKey(account);
    const entries = [{ token: live.key, type: 'tollgate_api_key', url: REPORT_URL, source: 'content' }];
    const before = inbox.messages.length;

    expectError(await report(gw, entries, { key: stranger.privateKey }), 401);
    expectError(await report(gw, entries, { id: 'unknown-id' }), 401);
    expectError(await report(gw, entries, { id: null }), 401);
    expectError(await report(gw, entries, { signature: 'bm90IGEgc2lnbmF0dXJl' }), 401);
    expectError(await report(gw, entries, { signature: '!!!' }), 401);
    // A valid signature over other bytes.
    const otherSignature = sign('sha256', Buffer.from('[]'), { key: signer.privateKey, dsaEncoding: 'der' }).toString(
      'base64',
    );
    expectError(await report(gw, entries, { signature: otherSignature }), 401);
    const noHeaders = await request(`${gw.api}/secret-scanning/verify`, {
      method: 'POST',
      body: JSON.stringify(entries),
      headers: { 'content-type': 'application/json' },
    });
    expect(noHeaders.statusCode).toBe(401);
    await noHeaders.body.dump();

    expect((await chat(gw, live.key, { model: 'test/chat', messages: HELLO })).status).toBe(200);
    await settleOutbox(gw);
    expect(inbox.messages.length).toBe(before);
  });

  it('a signed but malformed report is 400; an over-long one 413 or 400; an empty one []', async () => {
    expectError(await report(gw, { token: 'x' }), 400);
    expectError(await report(gw, [{ token: 1, type: 'x' }]), 400);
    const many = Array.from({ length: 1001 }, () => ({ token: 'x', type: 't' }));
    expectError(await report(gw, many), 400, /at most 1000/);
    const huge = [{ token: 'x'.repeat(300 * 1024), type: 't' }];
    expectError(await report(gw, huge), 413);
    const empty = await report(gw, []);
    expect(empty.status).toBe(200);
    expect(empty.json).toEqual([]);
  });

  it('POST /admin/keys/{hash}/compromised mails the holder once; GET /admin/outbox lists undelivered mail', async () => {
    const account = await gw.createAccount(5);
    const key = await gw.createKey(account, { name: 'laptop <script>' });
    const before = inbox.messages.length;
    expect(
      (await gw.admin('POST', `/keys/${key.hash}/compromised`, { reason: 'pasted in a public issue' })).status,
    ).toBe(200);
    const [mail] = (await inbox.waitFor(before + 1)).slice(before);
    expect(mail!.decoded).toContain('Reason: pasted in a public issue');
    // HTML values are escaped.
    expect(mail!.decoded).toContain('&quot;laptop &lt;script&gt;&quot;');
    const html = mail!.decoded.slice(mail!.decoded.search(/Content-Type: text\/html/i));
    expect(html).not.toContain('<script>');
    expect(mail!.decoded).not.toContain(key.key.slice(9));
    expect((await gw.admin('POST', `/keys/${key.hash}/compromised`, {})).status).toBe(200);
    await settleOutbox(gw);
    expect(inbox.messages.length).toBe(before + 1);

    const outbox = await gw.admin('GET', '/outbox');
    expect(outbox.status).toBe(200);
    expect(outbox.json).toEqual({ data: [], sending: true });
    expectError(await call(gw, 'GET', '/admin/outbox'), 401);
  });

  it('a key pasted into the free text of a report or an operator reason reaches no mail, outbox row or log', async () => {
    const account = await gw.createAccount(5);
    const [first, second, pasted] = [
      await gw.createKey(account, { name: 'first' }),
      await gw.createKey(account, { name: 'second' }),
      await gw.createKey(account, { name: 'pasted' }),
    ];
    const before = inbox.messages.length;
    const reason = `found beside ${pasted.key} in a gist`;
    expect((await gw.admin('POST', `/keys/${first.hash}/compromised`, { reason })).status).toBe(200);
    const answer = await report(gw, [
      { token: second.key, type: 'tollgate_api_key', url: `${REPORT_URL}?k=${pasted.key}`, source: pasted.key },
    ]);
    expect(answer.status, answer.text).toBe(200);
    const mails = (await inbox.waitFor(before + 2)).slice(before);
    expect(mails.map((m) => m.decoded).join('\n')).toContain('[redacted]');
    const secret = pasted.key.slice(9);
    for (const mail of mails) {
      expect(mail.raw).not.toContain(secret);
      expect(mail.decoded).not.toContain(secret);
    }
    const rows = await gw.database.openDriver().all('SELECT text_body, html_body FROM mail_outbox');
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(log.lines.join('')).toContain('key disabled as compromised');
    expect(log.lines.join('')).not.toContain(secret);
  });

  it("the README's signing script produces reports the gateway accepts", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-sign-'));
    try {
      const script = join(ROOT, 'scripts', 'sign-secret-scanning-report.mjs');
      execFileSync(process.execPath, [script, 'keygen', dir]);
      const publicPem = readFileSync(join(dir, 'scanning-public.pem'), 'utf8');
      const other = await startTestGateway({
        target: sqliteTarget,
        configure: (file) =>
          void ((file as Record<string, unknown>).secret_scanning = {
            public_keys: [{ key_identifier: 'test-key', key: publicPem }],
          }),
      });
      try {
        const account = await other.createAccount(1);
        const key = await other.createKey(account);
        // Asynchronously: the gateway answering it runs in this process.
        const { stdout: printed } = await promisify(execFile)(
          process.execPath,
          [script, 'send', '--key', join(dir, 'scanning-private.pem'), '--url', other.url, key.key],
          { encoding: 'utf8' },
        );
        expect(printed).toContain('HTTP 200');
        expect(JSON.parse(printed.split('\n')[1]!)).toEqual([
          { token_raw: key.key, token_type: 'tollgate_api_key', label: 'true_positive' },
        ]);
        expectError(await chat(other, key.key, { model: 'test/chat', messages: HELLO }), 401);
      } finally {
        await other.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
