/**
 * A usage that arrives before the answer is complete — here a usage-only chunk before a one-chunk
 * answer, read before the commit point — is not the provider's last word on usage, however whole:
 * the answer ends only at a closing usage that comes once every choice has finished, and the caller
 * is charged that one (both paths).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  DONE,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const MESSAGES = [{ role: 'user', content: 'hi' }];

describe('a usage-only chunk before a one-chunk answer, then the final usage chunk', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('early-usage', () => [
      // A running usage in a chunk without choices, before any content (nothing is finished yet).
      { write: usageChunk(11, 0) },
      // The whole answer in one chunk: the first content event, the last held one.
      { write: chunk({ role: 'assistant', content: 'Hello world' }, 'stop') },
      { wait: 100 },
      // The provider's last word on usage: the one to charge.
      { write: usageChunk(11, 9) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['early-usage']);
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('streamed: the usage chunk and /generation carry the final usage, not the early one', async () => {
    const r = await chatStream(gw, key, { model: 'scripted/early-usage', messages: MESSAGES });
    expect(r.done).toBe(true);
    expect(r.events.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 9 });
    const g = await getJson(gw, `/generation?id=${String(r.headers['x-generation-id'])}`, key);
    expect(g.json.data).toMatchObject({ tokens_prompt: 11, tokens_completion: 9 });
  });

  it('non-streamed: the same', async () => {
    const r = await chat(gw, key, { model: 'scripted/early-usage', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.content).toBe('Hello world');
    expect(r.json.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 9 });
  });
});
