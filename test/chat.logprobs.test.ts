/**
 * `logprobs` / `top_logprobs` are forwarded (README "What is forwarded upstream", docs/api.md §2.1)
 * and the provider's answer reaches the caller: each streamed chunk's own, and in a non-streamed
 * answer (folded from the upstream stream) one object per choice with the chunks' lists in order.
 * Regression: the caller always got `logprobs: null` — asked for, produced and billed, thrown away.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const lp = (token: string) => ({
  content: [
    {
      token,
      logprob: -0.25,
      bytes: [...Buffer.from(token)],
      top_logprobs: [{ token, logprob: -0.25, bytes: [...Buffer.from(token)] }],
    },
  ],
  refusal: null,
});

/** OpenAI's stream with logprobs: each choice carries `logprobs` next to its delta. */
function withLogprobs(delta: Record<string, unknown>, token: string | null, finish: string | null = null) {
  const text = chunk(delta, finish);
  const event = JSON.parse(text.slice('data: '.length));
  event.choices[0].logprobs = token === null ? null : lp(token);
  return `data: ${JSON.stringify(event)}\n\n`;
}

describe('logprobs reach the caller', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('lp', () => [
      { write: withLogprobs({ role: 'assistant', content: '' }, null) },
      { write: withLogprobs({ content: 'Hello' }, 'Hello') },
      { write: withLogprobs({ content: ' world' }, ' world') },
      { write: withLogprobs({}, null, 'stop') },
      { write: usageChunk(5, 2) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['lp']);
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const body = { model: 'scripted/lp', messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 1 };

  it('non-streamed: choices[0].logprobs.content lists the tokens', async () => {
    const r = await chat(gw, key, body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.content).toBe('Hello world');
    expect(r.json.choices[0].logprobs?.content?.map((t: { token: string }) => t.token)).toEqual(['Hello', ' world']);
  });

  it('streamed: each content chunk carries its logprobs', async () => {
    const s = await chatStream(gw, key, body);
    expect(s.status).toBe(200);
    const tokens = s.events
      .filter((e) => e.choices?.[0]?.delta?.content)
      .map((e) => e.choices[0].logprobs?.content?.[0]?.token ?? null);
    expect(tokens).toEqual(['Hello', ' world']);
  });
});
