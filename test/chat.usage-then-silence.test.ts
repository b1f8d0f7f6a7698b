/**
 * An answer whose every choice finished and whose usage arrived is done: the caller gets its usage
 * chunk and [DONE] (or its whole JSON answer) without waiting for the upstream's own [DONE] or end
 * of body — an upstream that goes silent after its usage (never sending [DONE], never closing)
 * held the caller until the idle timeout. The rest of its body is drained or dropped meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

/** Long enough that waiting for it would time the test out. */
const IDLE_MS = 60_000;

describe('an upstream silent after its finish and usage', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('silent-after-usage', () => [
      { write: chunk({ role: 'assistant', content: 'Hello' }) },
      { write: chunk({ content: ' world' }) },
      { write: chunk({}, 'stop') },
      { write: usageChunk(11, 7) },
      { hang: true },
    ]);
    gw = await startGatewayWith(upstream, ['silent-after-usage'], { idleMs: IDLE_MS });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it("streamed: the caller gets the usage chunk and [DONE] at once, charged the provider's usage", async () => {
    const r = await chatStream(gw, key, {
      model: 'scripted/silent-after-usage',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status).toBe(200);
    expect(r.done).toBe(true);
    expect(r.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('Hello world');
    const usage = r.events.at(-1).usage;
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
    const g = await getJson(gw, `/generation?id=${String(r.headers['x-generation-id'])}`, key);
    expect(g.json.data).toMatchObject({
      tokens_prompt: 11,
      tokens_completion: 7,
      usage_estimated: false,
      finish_reason: 'stop',
    });
  }, 15_000);

  it("non-streamed: the whole answer comes at once, charged the provider's usage", async () => {
    const r = await chat(gw, key, {
      model: 'scripted/silent-after-usage',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.content).toBe('Hello world');
    expect(r.json.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
  }, 15_000);
});
