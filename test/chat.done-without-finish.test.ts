/**
 * `[DONE]` before the answer finished is a cut answer, never a success: an upstream (often another
 * gateway that lost its own provider) sent content and then `[DONE]` without any finish_reason, and
 * the caller got a usage chunk and `[DONE]` (streamed) or a 200 with `finish_reason: null`
 * (non-streamed) — charged as a whole answer. Now the stream ends with an in-band error, and the
 * non-streamed request is the provider's invalid response (502, nothing charged), as when the body
 * ends without `[DONE]`. An answer that finished is unaffected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('done-unfinished', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'The answer is' }) },
    { write: DONE },
  ]);
  up.scripts.set('done-finished', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'The answer is 42.' }) },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  gw = await startGatewayWith(up, ['done-unfinished', 'done-finished']);
  accountId = await gw.createAccount(5);
  key = (await gw.createKey(accountId)).key;
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const ask = (model: string) => ({ model: `scripted/${model}`, messages: [{ role: 'user', content: 'hi' }] });

describe('[DONE] without a finish reason', () => {
  it('streamed: the caller gets the content, then an in-band error, not a usage chunk', async () => {
    const r = await chatStream(gw, key, ask('done-unfinished'));
    expect(r.status).toBe(200);
    expect(r.events.some((e) => e.choices?.[0]?.delta?.content === 'The answer is')).toBe(true);
    const error = r.events.find((e) => e.error);
    expect(error, r.raw).toBeDefined();
    expect(error.choices[0].finish_reason).toBe('error');
    // Every chunk carries logprobs (req,null), the error chunk too.
    expect(error.choices[0]).toHaveProperty('logprobs', null);
  });

  it('non-streamed: 502, nothing charged', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, ask('done-unfinished'));
    expect(r.status, r.text).toBe(502);
    expect(await balanceUnits(gw, accountId)).toBe(before);
  });

  it('an answer that finished before [DONE] is served, streamed or not', async () => {
    const streamed = await chatStream(gw, key, ask('done-finished'));
    expect(streamed.events.some((e) => e.error)).toBe(false);
    expect(streamed.events.find((e) => e.usage)).toBeDefined();
    const plain = await chat(gw, key, ask('done-finished'));
    expect(plain.status, plain.text).toBe(200);
    expect(plain.json.choices[0].finish_reason).toBe('stop');
  });
});
