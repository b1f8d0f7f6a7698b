/**
 * A non-streamed request served from an upstream stream is folded into one message
 * (routing/stream-aggregate.ts) that keeps what the streamed answer carries — `reasoning_details`
 * (which @openrouter/ai-sdk-provider reads from `choice.message` and sends back on the next turn) and
 * `annotations` (citations) included. Regression: the fold kept only content, reasoning, refusal and
 * tool calls, so the answer's content depended on a transport detail the caller cannot see.
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

const DETAILS = [
  { type: 'reasoning.text', text: 'Thinking it over.', signature: 'sig-123', format: 'anthropic-claude-v1', index: 0 },
];
const ANNOTATIONS = [
  {
    type: 'url_citation',
    url_citation: { url: 'https://example.test/a', title: 'A', start_index: 0, end_index: 5, content: 'x' },
  },
];

describe('non-streamed answers keep the provider message fields a stream carries', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    upstream.scripts.set('rd', () => [
      { write: chunk({ role: 'assistant', content: '' }) },
      { write: chunk({ reasoning: 'Thinking it over.', reasoning_details: DETAILS }) },
      { write: chunk({ content: 'Hello' }) },
      { write: chunk({ annotations: ANNOTATIONS }) },
      { write: chunk({}, 'stop') },
      { write: usageChunk(5, 2) },
      { write: DONE },
    ]);
    gw = await startGatewayWith(upstream, ['rd']);
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const body = { model: 'scripted/rd', messages: [{ role: 'user', content: 'hi' }] };

  it('streamed: the deltas carry reasoning_details and annotations (control)', async () => {
    const s = await chatStream(gw, key, body);
    expect(s.status).toBe(200);
    expect(s.events.flatMap((e) => e.choices?.[0]?.delta?.reasoning_details ?? [])).toEqual(DETAILS);
    expect(s.events.flatMap((e) => e.choices?.[0]?.delta?.annotations ?? [])).toEqual(ANNOTATIONS);
  });

  it('non-streamed: the message carries reasoning_details and annotations too', async () => {
    const r = await chat(gw, key, body);
    expect(r.status, r.text).toBe(200);
    const message = r.json.choices[0].message;
    expect(message.content).toBe('Hello');
    expect(message.reasoning).toBe('Thinking it over.');
    expect(message.reasoning_details).toEqual(DETAILS);
    expect(message.annotations).toEqual(ANNOTATIONS);
  });
});
