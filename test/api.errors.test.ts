/** Bad input on the inference route and the router's own errors (docs/api.md, §2.1): exact statuses, the error record, no charge. */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, expectNoLeak, HELLO, seenBodies, type CallResult } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

describe.each(STORE_TARGETS)('bad input ($name)', (target) => {
  let gw: TestGateway;
  let accountId: string;
  let key: string;
  let balance: number;

  const post = (options: { json?: unknown; raw?: string | Buffer; headers?: Record<string, string> }) =>
    call(gw, 'POST', '/chat/completions', { key, ...options });
  const rawJson = (raw: string | Buffer) => post({ raw, headers: { 'content-type': 'application/json' } });

  /** A refused inference request: the error record and an `x-generation-id`. */
  function expectInferenceError(result: CallResult, status: number, message?: string | RegExp) {
    const error = expectError(result, status, message);
    expect(result.headers['x-generation-id'], `x-generation-id on ${status} ${result.text}`).toMatch(/^gen-/);
    return error;
  }

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
    balance = (await gw.admin('GET', `/accounts/${accountId}`)).json.data.balance;
  });
  afterAll(async () => {
    await gw.close();
  });

  it('malformed JSON → 400', async () => {
    expectInferenceError(await rawJson('{"model": "test/chat", "messages": ['), 400);
    expectInferenceError(await rawJson('not json at all'), 400);
    expectInferenceError(await rawJson(''), 400);
  });

  it('a JSON body that is not an object → 400', async () => {
    expectInferenceError(await rawJson('[]'), 400);
    expectInferenceError(await rawJson(JSON.stringify([{ model: 'test/chat', messages: HELLO }])), 400);
    expectInferenceError(await rawJson('"hello"'), 400);
    expectInferenceError(await rawJson('42'), 400);
    expectInferenceError(await rawJson('null'), 400);
  });

  it('a missing or mistyped model → 400 naming the field', async () => {
    const missing = expectInferenceError(await post({ json: { messages: HELLO } }), 400);
    expect(missing.message).toContain('model');
    expect(expectInferenceError(await post({ json: { model: '', messages: HELLO } }), 400).message).toContain('model');
    expect(expectInferenceError(await post({ json: { model: 42, messages: HELLO } }), 400).message).toContain('model');
  });

  it('missing, empty or malformed messages → 400 naming the field', async () => {
    expect(expectInferenceError(await post({ json: { model: 'test/chat' } }), 400).message).toContain('messages');
    expect(expectInferenceError(await post({ json: { model: 'test/chat', messages: [] } }), 400).message).toContain(
      'messages',
    );
    expect(
      expectInferenceError(await post({ json: { model: 'test/chat', messages: 'hello' } }), 400).message,
    ).toContain('messages');
    expect(
      expectInferenceError(
        await post({ json: { model: 'test/chat', messages: [{ role: 'wizard', content: 'hi' }] } }),
        400,
      ).message,
    ).toContain('messages');
  });

  it('mistyped parameters → 400 naming the field', async () => {
    const cases: [string, unknown][] = [
      ['temperature', 'hot'],
      ['temperature', 5],
      ['max_tokens', -1],
      ['max_tokens', 1.5],
      ['top_p', 'high'],
      ['stream', 'yes'],
      ['seed', 'abc'],
      ['stop', 7],
      ['tools', 'all'],
      ['models', 'test/chat'],
      ['provider', 'mock'],
      ['reasoning', 'high'],
      ['reasoning', { max_tokens: 'lots' }],
      ['reasoning', { effort: 3 }],
      ['reasoning', { exclude: 'yes' }],
      ['reasoning_effort', 2],
      ['include_reasoning', 'true'],
      // Validated as documented (each was accepted and forwarded before):
      ['tools', [{ type: 'function', function: {} }]],
      ['tool_choice', { type: 'function' }],
      ['tool_choice', 'sometimes'],
      ['parallel_tool_calls', 'x'],
      ['response_format', { type: 'nope' }],
      ['response_format', { type: 'json_schema' }],
      ['reasoning', { effort: 'ultra' }],
      ['logit_bias', { abc: 1 }],
      ['top_logprobs', 1000],
      ['stop', ['a', 'b', 'c', 'd', 'e']],
    ];
    for (const [field, value] of cases) {
      const error = expectInferenceError(
        await post({ json: { model: 'test/chat', messages: HELLO, [field]: value } }),
        400,
      );
      expect(error.message, `${field}=${JSON.stringify(value)}`).toContain(field);
    }
  });

  it('a non-JSON content type → 400', async () => {
    const body = JSON.stringify({ model: 'test/chat', messages: HELLO });
    expectInferenceError(await post({ raw: body, headers: { 'content-type': 'text/plain' } }), 400);
    expectInferenceError(
      await post({ raw: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      400,
    );
    expectInferenceError(await post({ raw: body, headers: { 'content-type': 'application/octet-stream' } }), 400);
    expectInferenceError(await post({ raw: body }), 400);
  });

  it('a body over the size limit → 413', async () => {
    const big = JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'x'.repeat(300 * 1024) }] });
    expectInferenceError(await rawJson(big), 413);
    // Still 413 without a key: the limit is checked before anything else.
    const anonymous = await call(gw, 'POST', '/chat/completions', {
      raw: big,
      headers: { 'content-type': 'application/json' },
    });
    expectError(anonymous, 413);
  });

  it('an unknown model → 400 "<id> is not a valid model ID"', async () => {
    expectInferenceError(
      await post({ json: { model: 'test/nope', messages: HELLO } }),
      400,
      'test/nope is not a valid model ID',
    );
    expectInferenceError(
      await post({ json: { model: 'test/chat', models: ['test/ghost'], messages: HELLO } }),
      400,
      'test/ghost is not a valid model ID',
    );
  });

  it('a wrong method → 405 with Allow', async () => {
    const get = await call(gw, 'GET', '/chat/completions', { key });
    expectError(get, 405);
    expect(get.headers.allow).toBe('POST');
    const put = await call(gw, 'PUT', '/chat/completions', { key, json: { model: 'test/chat', messages: HELLO } });
    expectError(put, 405);
    expect(put.headers.allow).toBe('POST');
    const deleteKeys = await call(gw, 'DELETE', '/keys', { key });
    expectError(deleteKeys, 405);
    expect(String(deleteKeys.headers.allow).split(', ').sort()).toEqual(['GET', 'POST']);
  });

  it('an unknown route → 404', async () => {
    expectError(await call(gw, 'GET', '/nope'), 404);
    expectError(
      await call(gw, 'POST', '/chat/completion', { key, json: { model: 'test/chat', messages: HELLO } }),
      404,
    );
    expectError(await call(gw, 'GET', '/models/test/chat'), 404);
    // A trailing slash names no route: 404, never a 405 that allows the very method used.
    for (const path of ['/models/', '/key/', '/credits/', '/chat/completions/']) {
      const response = await call(gw, path === '/chat/completions/' ? 'POST' : 'GET', path, { key });
      expectError(response, 404);
      expect(response.headers.allow).toBeUndefined();
    }
    const outside = await request(`${gw.url}/definitely/not/here`);
    const text = await outside.body.text();
    expectError({ status: outside.statusCode, headers: outside.headers, text }, 404);
  });

  it('router failures answer with the error record too', async () => {
    // An over-long path segment names nothing; bad percent-encoding is a bad request.
    expectError(await call(gw, 'GET', `/models/test/${'x'.repeat(150)}/endpoints`), 404);
    expectError(await call(gw, 'GET', `/keys/${'a'.repeat(200)}`, { key }), 404);
    expectError(await call(gw, 'GET', '/models/test/chat%ZZ/endpoints'), 400);
    expectError(await call(gw, 'GET', '/models/test/chat%E0%A4%A/endpoints'), 400);
  });

  it('a JSON body with a __proto__ key is refused, not merged', async () => {
    expectInferenceError(
      await rawJson('{"model":"test/chat","messages":[{"role":"user","content":"hi"}],"__proto__":{"polluted":true}}'),
      400,
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('none of the refused requests changed the balance or the key usage', async () => {
    const account = (await gw.admin('GET', `/accounts/${accountId}`)).json.data;
    expect(account.balance).toBe(balance);
    expect(account.total_usage).toBe(0);
    const info = await call(gw, 'GET', '/key', { key });
    expect(info.json.data.usage).toBe(0);
  });

  it('no response ever carried a stack trace or the upstream key', () => {
    expect(seenBodies.length).toBeGreaterThan(30);
    for (const body of seenBodies) expectNoLeak(body);
  });
});
