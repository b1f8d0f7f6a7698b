/**
 * Issue 12, "Strict input": each request that used to be accepted (200/201 and, for chat, forwarded
 * and charged) now gets the right 4xx, forwards nothing and charges nothing — plus a property-based
 * sweep of malformed chat bodies. Upstream requests are counted at the loopback simulated provider.
 */
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, HELLO } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { jsonBodyOf, rawExchange } from './helpers/raw-http.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('strict input (issue 12)', () => {
  let gw: TestGateway;
  let accountA: string;
  let accountB: string;
  let keyA: string;
  let keyB: string;
  let management: string;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    accountA = await gw.createAccount(5);
    accountB = await gw.createAccount(5);
    keyA = (await gw.createKey(accountA)).key;
    keyB = (await gw.createKey(accountB)).key;
    management = (await gw.createKey(accountA, { management: true })).key;
  });
  afterAll(() => gw.close());

  /** Runs `act`, then asserts the upstream saw nothing and neither account was charged. */
  async function forwardsAndChargesNothing(act: () => Promise<void>): Promise<void> {
    const usage = async () =>
      Promise.all(
        [accountA, accountB].map(
          async (account) => (await gw.admin('GET', `/accounts/${account}`)).json.data.total_usage as number,
        ),
      );
    const upstream = gw.provider.stats.requests;
    const before = await usage();
    await act();
    expect(gw.provider.stats.requests, 'requests forwarded upstream').toBe(upstream);
    expect(await usage(), 'usage charged').toEqual(before);
  }

  const postChat = (body: string | Buffer, headers: Record<string, string> = {}) =>
    call(gw, 'POST', '/chat/completions', {
      key: keyA,
      raw: body,
      headers: { 'content-type': 'application/json', ...headers },
    });

  it('a user message without content → 400 naming it', async () => {
    await forwardsAndChargesNothing(async () => {
      const error = expectError(await chat(gw, keyA, { model: 'test/chat', messages: [{ role: 'user' }] }), 400);
      expect(error.message).toBe('Invalid request: messages[0].content: is required');
    });
  });

  it('a text part whose text is a number → 400 naming messages[i].content[j].text', async () => {
    await forwardsAndChargesNothing(async () => {
      const messages = [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'ok' },
            { type: 'text', text: 42 },
          ],
        },
      ];
      expect(expectError(await chat(gw, keyA, { model: 'test/chat', messages }), 400).message).toBe(
        'Invalid request: messages[1].content[1].text: must be a string',
      );
    });
  });

  it('other role shapes: tool without tool_call_id, assistant content of the wrong type, unknown role', async () => {
    await forwardsAndChargesNothing(async () => {
      const cases: [unknown[], string][] = [
        [
          [
            { role: 'user', content: 'hi' },
            { role: 'tool', content: '42' },
          ],
          'messages[1].tool_call_id: is required',
        ],
        [
          [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 7 },
            { role: 'user', content: 'again' },
          ],
          'messages[1].content: must be a string or an array of content parts',
        ],
        [
          [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 1 } }] }],
          'messages[0].content[0].image_url.url: must be a string',
        ],
      ];
      for (const [messages, path] of cases)
        expect(expectError(await chat(gw, keyA, { model: 'test/chat', messages }), 400).message).toBe(
          `Invalid request: ${path}`,
        );
      expect(
        expectError(await chat(gw, keyA, { model: 'test/chat', messages: [{ role: 'narrator', content: 'hi' }] }), 400)
          .message,
      ).toMatch(/^Invalid request: messages\[0\]\.role: "narrator" is not a role/);
    });
  });

  it('a function tool whose parameters, description or strict has the wrong type → 400 naming it', async () => {
    await forwardsAndChargesNothing(async () => {
      const fn = (extra: Record<string, unknown>) => [{ type: 'function', function: { name: 'lookup', ...extra } }];
      const cases: [unknown, string][] = [
        [fn({ parameters: 'nope' }), 'tools[0].function.parameters: must be a JSON Schema object'],
        [fn({ parameters: [] }), 'tools[0].function.parameters: must be a JSON Schema object'],
        [fn({ description: 3 }), 'tools[0].function.description: must be a string'],
        [fn({ strict: 'yes' }), 'tools[0].function.strict: must be a boolean'],
        [[{ type: 'function', function: 'lookup' }], 'tools[0].function: must be an object with a "name"'],
      ];
      for (const [tools, message] of cases)
        expect(expectError(await chat(gw, keyA, { model: 'test/chat', messages: HELLO, tools }), 400).message).toBe(
          `Invalid request: ${message}`,
        );
    });
    // A well-formed one still goes through.
    const ok = await chat(gw, keyA, {
      model: 'test/chat',
      messages: HELLO,
      tools: [
        {
          type: 'function',
          function: { name: 'lookup', description: 'd', strict: true, parameters: { type: 'object', properties: {} } },
        },
        // Clients that write every field send null for what they do not have (go-openai's parameters).
        { type: 'function', function: { name: 'now', description: null, parameters: null, strict: null } },
      ],
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('unknown top-level fields are not refused', async () => {
    const answer = await chat(gw, keyA, { model: 'test/chat', messages: HELLO, some_future_option: { on: true } });
    expect(answer.status).toBe(200);
    // Leave the accounts uncharged for the other cases: settle the balance check on this key only.
    expect(answer.json.usage.cost).toBeGreaterThan(0);
  });

  it('invalid UTF-8 inside an otherwise valid JSON body → 400', async () => {
    await forwardsAndChargesNothing(async () => {
      const body = Buffer.concat([
        Buffer.from('{"model":"test/chat","messages":[{"role":"user","content":"caf'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}]}'),
      ]);
      expectError(await postChat(body), 400, 'Request body is not valid UTF-8');
      // A lone surrogate encoded as UTF-8 (CESU) is not UTF-8 either.
      expectError(
        await postChat(
          Buffer.concat([
            Buffer.from('{"model":"test/chat","messages":[{"role":"user","content":"'),
            Buffer.from([0xed, 0xa0, 0x80]),
            Buffer.from('"}]}'),
          ]),
        ),
        400,
      );
    });
  });

  it('Content-Encoding other than identity → 415, whether or not the body is really compressed', async () => {
    await forwardsAndChargesNothing(async () => {
      const json = JSON.stringify({ model: 'test/chat', messages: HELLO });
      expectError(await postChat(json, { 'content-encoding': 'gzip' }), 415);
      expectError(await postChat(gzipSync(json), { 'content-encoding': 'gzip' }), 415);
      expectError(await postChat(json, { 'content-encoding': 'br' }), 415);
    });
    expect(
      (await postChat(JSON.stringify({ model: 'test/chat', messages: HELLO }), { 'content-encoding': 'identity' }))
        .status,
    ).toBe(200);
  });

  it('two Authorization headers carrying keys of two accounts → 401 before any lookup; neither account charged', async () => {
    await forwardsAndChargesNothing(async () => {
      const body = JSON.stringify({ model: 'test/chat', messages: HELLO });
      const conn = await rawExchange(gw.url);
      await conn.write(
        `POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${keyA}\r\nAuthorization: Bearer ${keyB}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      expect(await conn.status).toBe(401);
      await conn.closed;
      expect(jsonBodyOf(conn.received()).error.message).toBe(
        'Several Authorization headers: send exactly one credential',
      );
      // The same on the admin API and a management route.
      for (const [path, tokens] of [
        ['/api/v1/keys', [management, management]],
        ['/api/v1/admin/accounts/x', ['test-admin-token-0123456789', 'test-admin-token-0123456789']],
      ] as const) {
        const other = await rawExchange(gw.url);
        await other.write(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${tokens[0]}\r\nAuthorization: Bearer ${tokens[1]}\r\n\r\n`,
        );
        expect(await other.status, path).toBe(401);
        await other.closed;
      }
    });
  });

  it('one Authorization header with several credentials → 401', async () => {
    await forwardsAndChargesNothing(async () => {
      for (const authorization of [
        `Bearer ${keyA}, Bearer ${keyB}`,
        `Bearer ${keyA},${keyB}`,
        `Bearer ${keyA} ${keyB}`,
      ]) {
        const response = await call(gw, 'POST', '/chat/completions', {
          json: { model: 'test/chat', messages: HELLO },
          headers: { authorization },
        });
        expectError(response, 401);
      }
    });
  });

  it('expires_at: a UTC offset or February 30th → 400 saying what is wrong; nothing created', async () => {
    const before = (await call(gw, 'GET', '/keys', { key: management })).json.data.length;
    const offset = expectError(
      await call(gw, 'POST', '/keys', {
        key: management,
        json: { name: 'x', expires_at: '2030-01-01T00:00:00+02:00' },
      }),
      400,
    );
    expect(offset.message).toMatch(/expires_at must be in UTC, ending in "Z"/);
    const february = expectError(
      await call(gw, 'POST', '/keys', { key: management, json: { name: 'x', expires_at: '2030-02-30T00:00:00Z' } }),
      400,
    );
    expect(february.message).toContain('expires_at is not a calendar date: 2030-02 has no day 30');
    const admin = await gw.admin('POST', `/accounts/${accountA}/keys`, {
      name: 'x',
      expires_at: '2031-04-31T12:00:00Z',
    });
    expect(admin.status).toBe(400);
    expect((await call(gw, 'GET', '/keys', { key: management })).json.data.length).toBe(before);
    // The contract's own form still works, fractional seconds included.
    expect(
      (await call(gw, 'POST', '/keys', { key: management, json: { name: 'ok', expires_at: '2030-02-28T23:59:59.5Z' } }))
        .status,
    ).toBe(201);
  });

  it('property: malformed chat bodies get a 4xx error record, forward nothing and charge nothing', async () => {
    const valid = { role: 'user', content: 'hello' };
    const notString = fc.oneof(
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.integer(), { maxLength: 2 }),
      fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
    );
    const badPart = fc.oneof(
      notString.map((text) => ({ type: 'text', text: text ?? 1 })),
      notString.map((url) => ({ type: 'image_url', image_url: { url: url ?? 1 } })),
      fc
        .string({ maxLength: 12 })
        .filter((t) => !['text', 'image_url', 'input_audio', 'file', 'video_url'].includes(t))
        .map((type) => ({ type, text: 'x' })),
      fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
    );
    const badMessage = fc.oneof(
      fc
        .constantFrom('user', 'system', 'developer', 'tool')
        .map((role) => (role === 'tool' ? { role, tool_call_id: 'c' } : { role })),
      fc.record({
        role: fc.constantFrom('user', 'system'),
        content: fc.oneof(
          fc.integer(),
          fc.boolean(),
          fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
        ),
      }),
      fc.record({ role: fc.constant('user'), content: fc.array(badPart, { minLength: 1, maxLength: 3 }) }),
      fc.record({
        role: fc
          .string({ maxLength: 10 })
          .filter((r) => !['system', 'developer', 'user', 'assistant', 'tool', 'function'].includes(r)),
        content: fc.constant('hi'),
      }),
      fc.constant({ role: 'tool', content: 'result' }),
      fc.constant({ role: 'assistant', content: 42 }),
      fc.constant({ role: 'assistant', content: [{ type: 'image_url', image_url: { url: 'u' } }] }),
      notString.map((args) => ({
        role: 'assistant',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args ?? 7 } }],
      })),
      fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null), fc.constant([])),
    );
    const badBody = fc.oneof(
      fc
        .tuple(
          fc.array(fc.constant(valid), { maxLength: 4 }),
          badMessage,
          fc.array(fc.constant(valid), { maxLength: 4 }),
        )
        .map(([before, bad, after]) => ({ model: 'test/chat', messages: [...before, bad, ...after] })),
      fc
        .oneof(fc.integer(), fc.constant(''), fc.constant(null), fc.array(fc.string(), { maxLength: 1 }))
        .map((model) => ({ model, messages: [valid] })),
      fc
        .oneof(fc.constant([]), fc.string({ maxLength: 5 }), fc.integer(), fc.constant(null))
        .map((messages) => ({ model: 'test/chat', messages })),
      fc
        .constantFrom<[string, unknown[]]>(
          ['temperature', [-5, 3, 'x', {}]],
          ['max_tokens', [0, -5, 1.5, 'x']],
          ['top_p', [-1, 1.5, 'x']],
          ['stream', [1, 'yes', {}]],
          ['tools', [-5, 'x', {}, [1]]],
          ['stop', [-5, {}, ['a', 'b', 'c', 'd', 'e']]],
          ['seed', [1.5, 'x']],
        )
        .chain(([field, values]) =>
          fc.constantFrom(...values).map((value) => ({ model: 'test/chat', messages: [valid], [field]: value })),
        ),
    );
    await forwardsAndChargesNothing(async () => {
      await fc.assert(
        fc.asyncProperty(badBody, fc.boolean(), async (body, stream) => {
          const response = await postChat(JSON.stringify(stream ? { stream: true, ...body } : body));
          expect(response.status, response.text).toBeGreaterThanOrEqual(400);
          expect(response.status, response.text).toBeLessThan(500);
          const error = expectError(response, response.status);
          expect(error.code).toBe(response.status);
          expect(response.headers['x-generation-id']).toMatch(/^gen-/);
        }),
        { numRuns: 150 },
      );
    });
  });
});
