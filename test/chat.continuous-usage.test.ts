/**
 * An OpenAI-compatible upstream that puts a running usage on every chunk (vLLM's continuous usage
 * stats, Perplexity) still sends the request-wide usage last, in a chunk without choices, as
 * `include_usage` asks: that one is the answer's usage (its cached and reasoning counts included),
 * not the running one on the finish chunk.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  DONE,
  startGatewayWith,
  startScriptedUpstream,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const running = (completion: number) => ({
  usage: { prompt_tokens: 11, completion_tokens: completion, total_tokens: 11 + completion },
});
const FINAL = {
  choices: [],
  usage: {
    prompt_tokens: 11,
    completion_tokens: 7,
    total_tokens: 18,
    prompt_tokens_details: { cached_tokens: 8 },
    completion_tokens_details: { reasoning_tokens: 3 },
  },
};

describe('usage on every chunk, then the request-wide usage chunk', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('continuous-usage', () => [
      { write: chunk({ role: 'assistant', content: 'Hello' }, null, running(1)) },
      { write: chunk({ content: ' world' }, null, running(2)) },
      { write: chunk({}, 'stop', running(7)) },
      { write: chunk({}, null, FINAL) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['continuous-usage']);
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('streamed: the usage chunk and /generation carry the final usage chunk’s cached and reasoning counts', async () => {
    const r = await chatStream(gw, key, {
      model: 'scripted/continuous-usage',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.done).toBe(true);
    const usage = r.events.at(-1).usage;
    expect(usage).toMatchObject({
      prompt_tokens: 11,
      completion_tokens: 7,
      prompt_tokens_details: { cached_tokens: 8 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    const g = await getJson(gw, `/generation?id=${String(r.headers['x-generation-id'])}`, key);
    expect(g.json.data).toMatchObject({ native_tokens_cached: 8, native_tokens_reasoning: 3 });
  });

  it('non-streamed: the same', async () => {
    const r = await chat(gw, key, { model: 'scripted/continuous-usage', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage).toMatchObject({
      prompt_tokens_details: { cached_tokens: 8 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
  });
});
