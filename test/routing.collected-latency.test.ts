/**
 * A non-streamed answer read from an upstream stream (the default) tells its endpoint's health the time
 * to its first token, as a streamed one does — not the whole answer's duration (an outside checker's
 * finding): that taught the adaptive first-token timeout (3 × p99) to wait for a hung provider as long
 * as whole answers take, minutes for long ones, and skewed `sort: "latency"` and the endpoint figures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers/api.js';
import { chat, type TestGateway } from './helpers/gateway.js';
import {
  chunk,
  DONE,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

describe('latency recorded for non-streamed answers', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    // The first token at once, then the rest over ~2 s.
    upstream.scripts.set('slow-tail', () => [
      { write: chunk({ role: 'assistant', content: 'a' }) },
      ...Array.from({ length: 4 }, () => [{ wait: 500 }, { write: chunk({ content: ' b' }) }]).flat(),
      { write: chunk({}, 'stop') },
      { write: usageChunk(5, 5) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['slow-tail']);
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('the endpoint learns the time to the first token (milliseconds), not the 2 s the answer took', async () => {
    const account = await gw.createAccount(10);
    const { key } = await gw.createKey(account);
    const answers = await Promise.all(
      Array.from({ length: 3 }, () =>
        chat(gw, key, { model: 'scripted/slow-tail', messages: [{ role: 'user', content: 'hi' }] }),
      ),
    );
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const endpoints = (await call(gw, 'GET', '/models/scripted/slow-tail/endpoints')).json.data.endpoints;
    const latency = endpoints[0].latency_last_30m;
    expect(latency).not.toBeNull();
    expect(latency.p99).toBeLessThan(1000);
  });
});
