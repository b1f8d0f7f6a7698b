/**
 * Anthropic's `ping` events are its keep-alive: like SSE comment lines they carry nothing for the
 * caller and do not extend the idle budget (silence is counted between events that carry something),
 * so an Anthropic endpoint that sends one token and then only pings is given up on after `idle_ms`
 * — it would otherwise hold the caller, its credit hold and its capacity for as long as it pings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const IDLE_MS = 800;
const TIMEOUTS = { connect_ms: 2000, first_token_ms: 2000, idle_ms: IDLE_MS, response_ms: 5000 };

describe('an Anthropic stream that only pings after its first token', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // One token, then 4 s (5 × idle_ms) of nothing but pings, then the rest of the answer.
    upstream.scripts.set('claude-pinging', () => [
      A.start(),
      A.textStart(0),
      A.text(0, 'Hi'),
      ...Array.from({ length: 20 }, () => [{ wait: 200 }, A.ping()]).flat(),
      A.text(0, ' there'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 2 }),
      A.messageStop(),
    ]);
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'anth', kind: 'anthropic' }],
      models: [{ id: 'native/claude-pinging', endpoints: [{ provider: 'anth', model: 'claude-pinging' }] }],
      timeouts: TIMEOUTS,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('gives up after idle_ms of pings, as for keep-alive comments', async () => {
    const r = await chatStream(gw, key, {
      model: 'native/claude-pinging',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status).toBe(200);
    const failure = r.events.find((e) => e.error !== undefined);
    expect(failure, r.raw.slice(-400)).toBeDefined();
    expect(failure.error.metadata.error_type).toBe('timeout');
    // What came after 4 s of pings was not waited for.
    expect(r.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe('Hi');
  });
});
