/**
 * A caller that closes its connection as soon as it has a chunk carrying `finish_reason`: when every
 * choice has finished (the answer is complete) the upstream's usage, still on its way, is read and
 * charged; when another choice is still being written, the answer is cut as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForGeneration, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  ID,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  streamAndLeave,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;

/** The upstream's own count: 12 prompt tokens, 900 completion tokens of which 880 hidden reasoning. */
const USAGE = `data: ${JSON.stringify({
  id: ID,
  object: 'chat.completion.chunk',
  created: 1700000000,
  model: 'up-model',
  choices: [],
  usage: {
    prompt_tokens: 12,
    completion_tokens: 900,
    total_tokens: 912,
    completion_tokens_details: { reasoning_tokens: 880 },
  },
})}\n\n`;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('finish-then-usage', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'The answer is 42.' }) },
    { write: chunk({}, 'stop') },
    { wait: 300 }, // the usage chunk follows the finish chunk a little later
    { write: USAGE + DONE },
  ]);
  // Two choices (`n: 2`): the first finishes while the second is still being written.
  const second = (delta: Record<string, unknown>, finish: string | null = null) =>
    chunk({}, null, { choices: [{ index: 1, delta, logprobs: null, finish_reason: finish }] });
  up.scripts.set('two-choices', () => [
    { write: chunk({ role: 'assistant', content: 'One.' }) + second({ role: 'assistant', content: 'Two' }) },
    { write: chunk({}, 'stop') },
    { wait: 300 },
    { write: second({ content: ' and more' }) },
    { wait: 300 },
    { write: second({}, 'stop') + USAGE + DONE },
  ]);
  gw = await startGatewayWith(up, ['finish-then-usage', 'two-choices']);
  key = (await gw.createKey(await gw.createAccount(10))).key;
});
afterAll(async () => {
  await gw.close();
  await up.close();
});

describe('caller leaves after the finish chunk', () => {
  it('charges the upstream-reported usage of a finished answer, not an estimate of its visible text', async () => {
    const id = await streamAndLeave(gw, key, 'scripted/finish-then-usage', '"finish_reason":"stop"');
    const g = await waitForGeneration(gw, id, key, 5000);
    expect(g.status).toBe(200);
    const { tokens_completion, usage_estimated, finish_reason, cancelled } = g.json.data;
    // The upstream reported (and bills) 900 completion tokens for this finished answer.
    expect({ tokens_completion, usage_estimated, finish_reason, cancelled }).toEqual({
      tokens_completion: 900,
      usage_estimated: false,
      finish_reason: 'stop',
      cancelled: false,
    });
  });

  it('cuts an answer one of whose choices is still open: upstream ended, charged for what was produced, recorded as cut off', async () => {
    const id = await streamAndLeave(gw, key, 'scripted/two-choices', '"finish_reason":"stop"');
    const g = await waitForGeneration(gw, id, key, 5000);
    expect(g.status).toBe(200);
    expect(g.json.data.cancelled).toBe(true);
    expect(g.json.data.usage_estimated).toBe(true); // the upstream's usage never came: it was cut before
    const log = up.logs.get('two-choices')!.at(-1)!;
    expect(log.finishedWriting).toBe(false);
  });
});
