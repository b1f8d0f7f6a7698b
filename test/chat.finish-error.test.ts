/**
 * An answer the provider ends with `finish_reason: "error"` (or a reason we map to it: Gemini's OTHER,
 * an unreadable one) is a failure, never a finished answer. Before, a non-streamed caller got 200 with
 * the partial text ("Partial ans") and was charged, with no failover; a streamed caller got
 * `finish_reason: "error"` without an error object, then usage and `[DONE]`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { chunk, DONE, startScriptedUpstream, usageChunk, type ScriptedUpstream } from './helpers/scripted-upstream.js';
import { sqliteTarget } from './helpers/store-targets.js';

const PRICING = { prompt: '0.000001', completion: '0.000002' };

const answerJson = (content: string, finish: string) =>
  JSON.stringify({
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1700000000,
    model: 'up-model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
    usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
  });

describe('an answer the provider ends with an error', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('broken', () => [
      { write: chunk({ role: 'assistant', content: 'Partial' }) },
      { write: chunk({ content: ' ans' }) },
      { write: chunk({}, 'error') },
      { write: usageChunk(10, 2) },
      { write: DONE },
    ]);
    upstream.scripts.set('healthy', () => [
      { write: chunk({ role: 'assistant', content: 'Whole answer' }) },
      { write: chunk({}, 'stop') },
      { write: usageChunk(10, 2) },
      { write: DONE },
    ]);
    // vLLM's answer to a request its engine aborted (shutdown, pause, scale-down): 200, `abort`, [DONE].
    upstream.scripts.set('aborted', () => [
      { write: chunk({ role: 'assistant', content: 'aborted mid' }) },
      { write: chunk({}, 'abort') },
      { write: usageChunk(8, 3) },
      { write: DONE },
    ]);
    upstream.scripts.set('aborted-json', () => [{ write: answerJson('aborted mid', 'abort') }]);
    upstream.scripts.set('broken-json', () => [{ write: answerJson('Partial ans', 'error') }]);
    upstream.scripts.set('healthy-json', () => [{ write: answerJson('Whole answer', 'stop') }]);
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        const timeouts = { connect_ms: 2000, first_token_ms: 5000, idle_ms: 5000, response_ms: 10_000 };
        file.providers.push(
          { id: 'up-a', name: 'Up A', kind: 'openai', base_url: upstream.url, api_key: 'key-a', timeouts },
          { id: 'up-b', name: 'Up B', kind: 'openai', base_url: upstream.url, api_key: 'key-b', timeouts },
          {
            id: 'plain',
            name: 'Plain',
            kind: 'openai',
            base_url: upstream.url,
            api_key: 'key-p',
            timeouts,
            stream_upstream: false,
          },
        );
        (file.models as unknown[]).push(
          {
            id: 'test/broken-then-healthy',
            name: 'broken, then healthy',
            context_length: 8192,
            endpoints: [
              { provider: 'up-a', model: 'broken', pricing: PRICING },
              { provider: 'up-b', model: 'healthy', pricing: PRICING },
            ],
          },
          {
            id: 'test/broken-only',
            name: 'broken only',
            context_length: 8192,
            endpoints: [{ provider: 'up-a', model: 'broken', pricing: PRICING }],
          },
          {
            id: 'test/aborted-then-healthy',
            name: 'aborted, then healthy',
            context_length: 8192,
            endpoints: [
              { provider: 'up-a', model: 'aborted', pricing: PRICING },
              { provider: 'up-b', model: 'healthy', pricing: PRICING },
            ],
          },
          {
            id: 'test/aborted-only',
            name: 'aborted only',
            context_length: 8192,
            endpoints: [{ provider: 'up-a', model: 'aborted', pricing: PRICING }],
          },
          {
            id: 'test/plain-aborted-then-healthy',
            name: 'plain: aborted, then healthy',
            context_length: 8192,
            endpoints: [
              { provider: 'plain', model: 'aborted-json', pricing: PRICING },
              { provider: 'plain', model: 'healthy-json', pricing: PRICING },
            ],
          },
          {
            id: 'test/plain-broken-then-healthy',
            name: 'plain: broken, then healthy',
            context_length: 8192,
            endpoints: [
              { provider: 'plain', model: 'broken-json', pricing: PRICING },
              { provider: 'plain', model: 'healthy-json', pricing: PRICING },
            ],
          },
        );
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const ask = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

  it('a non-streamed request fails over to the next endpoint (read from a stream, and from a JSON answer)', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    for (const model of ['test/broken-then-healthy', 'test/plain-broken-then-healthy']) {
      const r = await chat(gw, key, ask(model));
      expect(r.status, r.text).toBe(200);
      expect(r.json.choices[0].message.content).toBe('Whole answer');
      expect(r.json.choices[0].finish_reason).toBe('stop');
    }
  });

  it('with no other endpoint, a non-streamed request gets the error, not the partial text', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    const r = await chat(gw, key, ask('test/broken-only'));
    expect(r.status).toBe(502);
    expect(r.json.error.message).toContain('ended the answer with an error');
  });

  it('a streamed request already under way ends with the in-band error, not usage and [DONE] as a finished answer', async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    const s = await chatStream(gw, key, ask('test/broken-only'));
    expect(s.status).toBe(200);
    const error = s.events.find((e) => e.error !== undefined);
    expect(error?.error.message).toContain('ended the answer with an error');
    expect(error?.choices[0].finish_reason).toBe('error');
    expect(s.events.filter((e) => e.choices?.[0]?.finish_reason === 'error')).toHaveLength(1);
  });

  it("vLLM's `abort` (its engine aborted the request) is a cut answer too: failover, the error, the in-band error", async () => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    for (const model of ['test/aborted-then-healthy', 'test/plain-aborted-then-healthy']) {
      const r = await chat(gw, key, ask(model));
      expect(r.status, r.text).toBe(200);
      expect(r.json.choices[0].message.content).toBe('Whole answer');
    }
    expect((await chat(gw, key, ask('test/aborted-only'))).status).toBe(502);
    const s = await chatStream(gw, key, ask('test/aborted-only'));
    const error = s.events.find((e) => e.error !== undefined);
    expect(error?.choices[0].finish_reason).toBe('error');
    expect(s.events.some((e) => e.choices?.[0]?.finish_reason === 'abort')).toBe(false);
  });
});
