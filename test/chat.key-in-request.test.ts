/**
 * A Tollgate key pasted into a chat request: `redact` (default) forwards the request with the key
 * replaced by its masked label — checked at a loopback upstream that records what it received — and
 * mails the key's holder once; `block` refuses it (400 naming the reason) and forwards nothing.
 * Look-alikes with a bad checksum pass untouched.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { startInbox, type Inbox } from './helpers/smtp-inbox.js';
import { sqliteTarget } from './helpers/store-targets.js';

interface Upstream {
  url: string;
  bodies: string[];
  close(): Promise<void>;
}

async function recordingUpstream(): Promise<Upstream> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'rec',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const label = (key: string) => `sk-tg-v1-${key.slice(9, 12)}...${key.slice(-3)}`;

describe.each(['redact', 'block'] as const)('a Tollgate key inside a chat request (in_requests: %s)', (mode) => {
  let inbox: Inbox;
  let upstream: Upstream;
  let gw: TestGateway;

  beforeAll(async () => {
    inbox = await startInbox();
    upstream = await recordingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      env: { TOLLGATE_SMTP_URL: inbox.url },
      extraModels: [
        {
          id: 'rec/chat',
          name: 'rec',
          context_length: 8192,
          endpoints: [{ provider: 'rec', model: 'rec-model', pricing: { prompt: '0.000001', completion: '0.000001' } }],
        },
      ],
      configure: (file) => {
        file.providers.push({
          id: 'rec',
          name: 'Rec',
          kind: 'openai',
          base_url: upstream.url,
          timeouts: { connect_ms: 2000 },
          stream_upstream: false,
        });
        const f = file as Record<string, unknown>;
        f.mail = {
          from: 'Tollgate <noreply@tollgate.test>',
          poll_interval_ms: 100,
          retry_base_ms: 100,
          retry_max_ms: 400,
        };
        if (mode === 'block') f.secret_scanning = { in_requests: 'block' };
      },
    });
    gw.gateway.startBackground();
  });

  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
    await inbox?.close();
  });

  it(
    mode === 'redact'
      ? 'forwards the request with the key replaced by its label, and mails the holder once'
      : 'refuses the request with 400 and forwards nothing, and mails the holder once',
    async () => {
      const caller = await gw.createAccount(5);
      const callerKey = await gw.createKey(caller);
      const owner = await gw.createAccount(5);
      const ownerEmail = (await gw.admin('GET', `/accounts/${owner}`)).json.data.email as string;
      const pasted = await gw.createKey(owner, { name: 'production' });
      const lookAlike = `sk-tg-v1-${'a'.repeat(64)}`;
      const messages = [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: `my key is ${pasted.key}, and ${lookAlike} is not one` },
        { role: 'user', content: [{ type: 'text', text: `again: ${pasted.key}` }] },
      ];
      const before = upstream.bodies.length;
      const result = await chat(gw, callerKey.key, { model: 'rec/chat', messages });

      if (mode === 'redact') {
        expect(result.status, result.text).toBe(200);
        expect(upstream.bodies.length).toBe(before + 1);
        const sent = upstream.bodies.at(-1)!;
        expect(sent).not.toContain(pasted.key);
        const forwarded = JSON.parse(sent) as { messages: Array<{ content: unknown }> };
        expect(forwarded.messages[1]!.content).toBe(`my key is ${label(pasted.key)}, and ${lookAlike} is not one`);
        expect(forwarded.messages[2]!.content).toEqual([{ type: 'text', text: `again: ${label(pasted.key)}` }]);
        expect(forwarded.messages[0]!.content).toBe('be brief');
      } else {
        const error = expectError(result, 400, /contains a Tollgate API key/);
        expect(error.message).toContain(label(pasted.key));
        expect(error.message).toContain('messages[1].content');
        expect(error.metadata).toEqual({ reason: 'api_key_in_content', labels: [label(pasted.key)] });
        expect(result.text).not.toContain(pasted.key);
        expect(upstream.bodies.length).toBe(before);
      }

      // The pasted key's holder (not the caller) hears about it, once, however often it is pasted.
      const arrived = async (count: number) => {
        for (let i = 0; i < 300 && inbox.messages.filter((m) => m.to.includes(ownerEmail)).length < count; i++)
          await new Promise((r) => setTimeout(r, 50));
        return inbox.messages.filter((m) => m.to.includes(ownerEmail));
      };
      const [notice] = await arrived(1);
      expect(notice!.subject).toBe(`Your Tollgate API key ${label(pasted.key)} appeared inside a chat request`);
      expect(notice!.decoded).toContain('"production"');
      expect(notice!.decoded).not.toContain(pasted.key.slice(9));
      await chat(gw, callerKey.key, { model: 'rec/chat', messages });
      await new Promise((r) => setTimeout(r, 600));
      expect(inbox.messages.filter((m) => m.to.includes(ownerEmail))).toHaveLength(1);
      // The key itself still works: pasting it is not a report of exposure.
      expect(
        (await chat(gw, pasted.key, { model: 'rec/chat', messages: [{ role: 'user', content: 'hi' }] })).status,
      ).toBe(200);
    },
  );

  it('the notice says what a disabled key can do, and a key already reported compromised gets no second mail', async () => {
    const caller = await gw.createAccount(5);
    const callerKey = await gw.createKey(caller);
    const owner = await gw.createAccount(5);
    const ownerEmail = (await gw.admin('GET', `/accounts/${owner}`)).json.data.email as string;
    const disabled = await gw.createKey(owner, { name: 'old' });
    const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
    expect((await gw.admin('PATCH', `/keys/${hashOf(disabled.key)}`, { disabled: true })).status).toBe(200);
    const reported = await gw.createKey(owner, { name: 'leaked' });
    expect((await gw.admin('POST', `/keys/${hashOf(reported.key)}/compromised`, {})).status).toBe(200);
    const mailsTo = async (count: number) => {
      for (let i = 0; i < 300 && inbox.messages.filter((m) => m.to.includes(ownerEmail)).length < count; i++)
        await new Promise((r) => setTimeout(r, 50));
      return inbox.messages.filter((m) => m.to.includes(ownerEmail));
    };
    const [compromisedNotice] = await mailsTo(1);
    expect(compromisedNotice!.subject).toContain('was exposed and has been disabled');

    await chat(gw, callerKey.key, {
      model: 'rec/chat',
      messages: [{ role: 'user', content: `${disabled.key} and ${reported.key}` }],
    });
    const notices = await mailsTo(2);
    await new Promise((r) => setTimeout(r, 600));
    expect(inbox.messages.filter((m) => m.to.includes(ownerEmail))).toHaveLength(2);
    const notice = notices[1]!;
    expect(notice.subject).toBe(`Your Tollgate API key ${label(disabled.key)} appeared inside a chat request`);
    // Before, every such notice said "The key is still enabled" (outside check).
    expect(notice.decoded).toContain('The key is disabled, so requests made with it are refused');
    expect(notice.decoded).not.toContain('still enabled');
  });

  it(`a key in an assistant's tool call arguments or in \`user\` is ${mode === 'redact' ? 'redacted' : 'refused'} too`, async () => {
    const caller = await gw.createAccount(5);
    const callerKey = await gw.createKey(caller);
    const pasted = await gw.createKey(await gw.createAccount(5), { name: 'elsewhere' });
    const messages = [
      { role: 'user', content: 'call it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: `{"token":"${pasted.key}"}` } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ];
    const before = upstream.bodies.length;
    const result = await chat(gw, callerKey.key, { model: 'rec/chat', messages, user: `owner ${pasted.key}` });
    expect(result.text).not.toContain(pasted.key);
    if (mode === 'redact') {
      expect(result.status, result.text).toBe(200);
      const sent = upstream.bodies.at(-1)!;
      expect(sent).not.toContain(pasted.key);
      const forwarded = JSON.parse(sent) as { user: string; messages: Array<{ tool_calls?: any[] }> };
      expect(forwarded.messages[1]!.tool_calls![0].function.arguments).toBe(`{"token":"${label(pasted.key)}"}`);
      expect(forwarded.user).toBe(`owner ${label(pasted.key)}`);
    } else {
      const error = expectError(result, 400, /contains a Tollgate API key/);
      expect(error.message).toContain('messages[1].tool_calls');
      expect(error.message).toContain('user');
      expect(upstream.bodies.length).toBe(before);
    }
  });

  it('a request without a key is forwarded unchanged', async () => {
    const account = await gw.createAccount(5);
    const key = await gw.createKey(account);
    const before = upstream.bodies.length;
    const content = `sk-tg-v1- is our prefix; sk-tg-v1-${'0'.repeat(63)} is too short`;
    expect((await chat(gw, key.key, { model: 'rec/chat', messages: [{ role: 'user', content }] })).status).toBe(200);
    expect(upstream.bodies.length).toBe(before + 1);
    expect(JSON.parse(upstream.bodies.at(-1)!).messages[0].content).toBe(content);
  });
});
