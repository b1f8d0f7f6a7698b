/**
 * Mid-stream continuation onto an Anthropic endpoint (the canonical prefill provider) after the
 * broken segment stopped on whitespace — a paragraph break is enough. The Messages API refuses a
 * final assistant text that ends in whitespace (400 "final assistant content cannot end with
 * trailing whitespace"; langchain-ai/langchain#35071, vercel/ai#2124), so the prefill goes without
 * it, and the whitespace the continuation starts with is dropped: the caller has it already. The
 * loopback Anthropic below enforces that documented rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };

type Block = { type: string; text?: string };
type Message = { role: string; content: string | Block[] };

/** What the real Messages API answers to a prefill that ends in whitespace, else null. */
function trailingWhitespaceRejection(body: Record<string, unknown>): string | null {
  const last = (body.messages as Message[] | undefined)?.at(-1);
  if (last?.role !== 'assistant') return null;
  const text = typeof last.content === 'string' ? last.content : (last.content.at(-1)?.text ?? '');
  if (!/\s$/.test(text)) return null;
  return JSON.stringify({
    type: 'error',
    error: {
      type: 'invalid_request_error',
      message: 'messages: final assistant content cannot end with trailing whitespace',
    },
  });
}

describe('mid-stream continuation onto an Anthropic endpoint', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    // The first endpoint writes a heading and a paragraph break, then Anthropic reports overload.
    upstream.scripts.set('claude-breaks', () => [
      A.start(),
      A.textStart(0),
      A.text(0, 'The answer is:'),
      A.text(0, '\n\n'),
      A.event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    ]);
    // The continuing endpoint: a well-behaved Anthropic that validates the prefill as the API does.
    upstream.scripts.set('claude-continues', (body) => {
      const rejection = trailingWhitespaceRejection(body);
      if (rejection !== null) return [{ status: 400 }, rejection];
      return [
        A.start({ input_tokens: 30, output_tokens: 1 }),
        A.textStart(0),
        // A model continuing "The answer is:" starts with the paragraph break the caller already has.
        A.text(0, '\n\n42.'),
        A.blockStop(0),
        A.messageDelta('end_turn', { output_tokens: 2 }),
        A.messageStop(),
      ];
    });
    gw = await startNativeGateway(upstream, {
      providers: [
        { id: 'anth-a', kind: 'anthropic' },
        { id: 'anth-b', kind: 'anthropic' },
      ],
      models: [
        {
          id: 'native/claude-continued',
          endpoints: [
            { provider: 'anth-a', model: 'claude-breaks' },
            {
              provider: 'anth-b',
              model: 'claude-continues',
              pricing: { prompt: '0.000003', completion: '0.000004' },
              supports_prefill: true,
            },
          ],
        },
      ],
      timeouts: FAST,
    });
    key = (await gw.createKey(await gw.createAccount(10))).key;
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('continues an answer that broke after a paragraph break', async () => {
    const r = await chatStream(gw, key, {
      model: 'native/claude-continued',
      messages: [{ role: 'user', content: 'What is the answer?' }],
    });
    expect(r.status).toBe(200);
    // The continuation endpoint was asked.
    expect(upstream.requests.some((x) => x.model === 'claude-continues')).toBe(true);
    expect(
      r.events.filter((e) => e.error !== undefined),
      r.raw.slice(-500),
    ).toEqual([]);
    const text = r.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
    expect(text).toBe('The answer is:\n\n42.');
    const continued = upstream.requests.find((x) => x.model === 'claude-continues')!;
    expect((continued.body.messages as { role: string }[]).at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'The answer is:' }],
    });
    expect(r.done).toBe(true);
  });
});
