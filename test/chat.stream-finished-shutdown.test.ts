/**
 * Shutdown's grace ends after the upstream sent the chunk carrying `finish_reason` (and its usage)
 * but before its `[DONE]`: the caller already holds the whole answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const MESSAGES = [{ role: 'user', content: 'hi' }];
let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('finished-then-slow-done', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'Complete answer.' }) },
    { write: chunk({}, 'stop') + usageChunk(10, 3) },
    { hang: true }, // [DONE] is late
  ]);
  gw = await startGatewayWith(up, ['finished-then-slow-done'], { idleMs: 5000 });
  key = (await gw.createKey(await gw.createAccount(10))).key;
});
afterAll(async () => {
  await gw.close().catch(() => undefined);
  await up.close();
});

describe('shutdown after the answer finished', () => {
  it('finalises the finished answer (usage chunk, [DONE]) instead of appending an error chunk after "stop"', async () => {
    const streaming = chatStream(gw, key, { model: 'scripted/finished-then-slow-done', messages: MESSAGES });
    await new Promise((r) => setTimeout(r, 500));
    const shutdown = gw.gateway.shutdown(200);
    const s = await streaming;
    await shutdown;
    const finishes = s.events
      .flatMap((e) => (e.choices ?? []).map((c: any) => c.finish_reason))
      .filter((f) => f !== null);
    const generation = await gw.store.getGeneration(String(s.headers['x-generation-id']));

    expect(finishes).toEqual(['stop']);
    expect(s.events.some((e) => e.error)).toBe(false);
    expect(s.events.at(-1).usage?.completion_tokens).toBe(3);
    expect(generation?.finishReason).toBe('stop');
  });
});
