/**
 * Anthropic extended thinking through the gateway, end to end, as OpenRouter exposes it:
 * - A `thinking` block comes back as `reasoning` and as a `reasoning_details` item
 *   `{ type: 'reasoning.text', text, signature, format: 'anthropic-claude-v1', index }`, a
 *   `redacted_thinking` block as `{ type: 'reasoning.encrypted', data, … }`: streamed as fragments
 *   (the signature last), folded into one signed detail per block for a non-streamed caller.
 * - `reasoning_details` on an assistant message go back to Anthropic as `thinking` /
 *   `redacted_thinking` blocks ahead of the turn's text and tool_use (Anthropic refuses a tool loop
 *   whose last assistant turn lost its signed thinking); with @openrouter/ai-sdk-provider too.
 * - OpenRouter's `reasoning` request field turns on `thinking: { type: 'enabled', budget_tokens }`
 *   on endpoints that list `reasoning`, within the completion limit the hold was computed from;
 *   with `exclude: true` the model thinks and the answer carries no reasoning.
 */
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const TOOL = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

function thinkingThenTool(): string[] {
  return [
    A.start({ input_tokens: 30, output_tokens: 1 }),
    A.event('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    }),
    A.event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'thinking_delta', thinking: 'The user wants weather.' },
    }),
    A.event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'signature_delta', signature: 'SIG-abc123' },
    }),
    A.blockStop(0),
    A.event('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'redacted_thinking', data: 'REDACTED-BLOB' },
    }),
    A.blockStop(1),
    A.event('content_block_start', {
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    }),
    A.event('content_block_delta', {
      type: 'content_block_delta',
      index: 2,
      delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' },
    }),
    A.blockStop(2),
    A.messageDelta('tool_use', { output_tokens: 40 }),
    A.messageStop(),
  ];
}

/** After a tool result: a short text answer. */
function finalAnswer(): string[] {
  return [
    A.start({ input_tokens: 60, output_tokens: 1 }),
    A.textStart(0),
    A.text(0, 'It is 18C.'),
    A.blockStop(0),
    A.messageDelta('end_turn', { output_tokens: 5 }),
    A.messageStop(),
  ];
}

/** Whether the request's last turn carries a tool result. */
function answersTool(body: Record<string, unknown>): boolean {
  const messages = (body.messages ?? []) as { content: { type: string }[] }[];
  return messages.at(-1)?.content.some((block) => block.type === 'tool_result') ?? false;
}

/** A redacted block first, then a tool call: the stream's first chunk carries reasoning_details only. */
function redactedThenTool(): string[] {
  return thinkingThenTool().filter((_event, i) => i === 0 || i >= 5);
}

describe('Anthropic thinking and reasoning_details', () => {
  let upstream: ScriptedProvider;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startScriptedProvider();
    upstream.scripts.set('claude-think', (body) => (answersTool(body) ? finalAnswer() : thinkingThenTool()));
    upstream.scripts.set('claude-redacted', redactedThenTool);
    const listed = ['max_tokens', 'temperature', 'tools', 'tool_choice', 'reasoning', 'include_reasoning'];
    gw = await startNativeGateway(upstream, {
      providers: [{ id: 'anth', kind: 'anthropic' }],
      models: [
        {
          id: 'native/claude-think',
          endpoints: [{ provider: 'anth', model: 'claude-think', supported_parameters: listed } as never],
        },
        {
          id: 'native/claude-redacted',
          endpoints: [{ provider: 'anth', model: 'claude-redacted', supported_parameters: listed } as never],
        },
        {
          // An endpoint whose operator did not list `reasoning`: the field never reaches it.
          id: 'native/claude-plain',
          endpoints: [{ provider: 'anth', model: 'claude-think', supported_parameters: ['max_tokens'] } as never],
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

  it('non-streamed: one signed detail for the thinking block and one encrypted detail for the redacted block', async () => {
    const r = await chat(gw, key, {
      model: 'native/claude-think',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [TOOL],
    });
    expect(r.status, r.text).toBe(200);
    const message = r.json.choices[0].message;
    expect(message.reasoning).toBe('The user wants weather.');
    expect(message.reasoning_details, JSON.stringify(message)).toEqual([
      {
        type: 'reasoning.text',
        text: 'The user wants weather.',
        signature: 'SIG-abc123',
        format: 'anthropic-claude-v1',
        index: 0,
      },
      { type: 'reasoning.encrypted', data: 'REDACTED-BLOB', format: 'anthropic-claude-v1', index: 1 },
    ]);
    expect(message.tool_calls).toHaveLength(1);
  });

  it('streamed: thinking text and the signature as fragments of detail 0, the redacted block as detail 1', async () => {
    const r = await chatStream(gw, key, {
      model: 'native/claude-think',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [TOOL],
    });
    expect(r.status).toBe(200);
    const details = r.events.flatMap((e) => e.choices?.[0]?.delta?.reasoning_details ?? []);
    expect(details, r.raw).toEqual([
      { type: 'reasoning.text', text: 'The user wants weather.', format: 'anthropic-claude-v1', index: 0 },
      { type: 'reasoning.text', text: '', signature: 'SIG-abc123', format: 'anthropic-claude-v1', index: 0 },
      { type: 'reasoning.encrypted', data: 'REDACTED-BLOB', format: 'anthropic-claude-v1', index: 1 },
    ]);
    const reasoning = r.events.map((e) => e.choices?.[0]?.delta?.reasoning ?? '').join('');
    expect(reasoning).toBe('The user wants weather.');
  });

  it('a stream whose first block is redacted thinking (a reasoning_details-only chunk) is relayed whole', async () => {
    const streamed = await chatStream(gw, key, {
      model: 'native/claude-redacted',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [TOOL],
    });
    expect(streamed.status).toBe(200);
    const details = streamed.events.flatMap((e) => e.choices?.[0]?.delta?.reasoning_details ?? []);
    expect(details, streamed.raw).toEqual([
      { type: 'reasoning.encrypted', data: 'REDACTED-BLOB', format: 'anthropic-claude-v1', index: 0 },
    ]);
    expect(
      streamed.events.some((e) => e.choices?.[0]?.finish_reason === 'tool_calls'),
      streamed.raw,
    ).toBe(true);
    const whole = await chat(gw, key, {
      model: 'native/claude-redacted',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [TOOL],
    });
    expect(whole.status, whole.text).toBe(200);
    expect(whole.json.choices[0].message.reasoning_details).toEqual(details);
  });

  it("a client's reasoning_details in the assistant turn reach Anthropic as thinking blocks before tool_use", async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/claude-think',
      tools: [TOOL],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          reasoning: 'The user wants weather.',
          reasoning_details: [
            {
              type: 'reasoning.text',
              text: 'The user wants weather.',
              signature: 'SIG-abc123',
              format: 'anthropic-claude-v1',
              index: 0,
            },
            { type: 'reasoning.encrypted', data: 'REDACTED-BLOB', format: 'anthropic-claude-v1', index: 1 },
            { type: 'reasoning.encrypted', data: 'GEMINI-SIG', format: 'google-gemini-v1', index: 0 },
          ],
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const sent = upstream.requests.at(-1)!.body as { messages: { role: string; content: any[] }[] };
    const assistant = sent.messages[1]!;
    expect(assistant.role).toBe('assistant');
    expect(assistant.content, JSON.stringify(assistant.content)).toEqual([
      { type: 'thinking', thinking: 'The user wants weather.', signature: 'SIG-abc123' },
      { type: 'redacted_thinking', data: 'REDACTED-BLOB' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });

  it('@openrouter/ai-sdk-provider tool loop: the signed thinking and the redacted block reach Anthropic on the next turn', async () => {
    upstream.requests.length = 0;
    const openrouter = createOpenRouter({ baseURL: gw.api, apiKey: key });
    const result = await generateText({
      model: openrouter('native/claude-think'),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
          execute: async () => ({ temperature: 18 }),
        }),
      },
    });
    expect(result.text).toBe('It is 18C.');
    expect(upstream.requests).toHaveLength(2);
    const messages = upstream.requests[1]!.body.messages as { role: string; content: Record<string, unknown>[] }[];
    const assistant = messages.find((m) => m.role === 'assistant');
    expect(assistant?.content.slice(0, 2), JSON.stringify(messages)).toEqual([
      { type: 'thinking', thinking: 'The user wants weather.', signature: 'SIG-abc123' },
      { type: 'redacted_thinking', data: 'REDACTED-BLOB' },
    ]);
    expect(assistant?.content.at(-1)).toMatchObject({ type: 'tool_use', id: 'toolu_1', name: 'get_weather' });
  });

  it('`reasoning: { max_tokens }` on an endpoint that lists `reasoning` turns on Anthropic thinking', async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/claude-think',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      max_tokens: 4000,
      reasoning: { max_tokens: 2048 },
      tools: [TOOL],
    });
    expect(r.status, r.text).toBe(200);
    const sent = upstream.requests.at(-1)!.body;
    expect(sent.thinking, JSON.stringify(sent)).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(sent.max_tokens).toBe(4000);
  });

  it('`reasoning: { effort }` is a share of the completion limit; temperature and a forced tool choice give way', async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/claude-think',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      max_tokens: 10_000,
      temperature: 0.2,
      reasoning: { effort: 'high' },
      tools: [TOOL],
      tool_choice: 'required',
    });
    expect(r.status, r.text).toBe(200);
    const sent = upstream.requests.at(-1)!.body;
    expect(sent.thinking, JSON.stringify(sent)).toEqual({ type: 'enabled', budget_tokens: 8000 });
    expect(sent.max_tokens).toBe(10_000);
    expect(sent).not.toHaveProperty('temperature');
    expect(sent.tool_choice).toEqual({ type: 'auto' });
  });

  it('an endpoint that does not list `reasoning` never gets thinking', async () => {
    upstream.requests.length = 0;
    const r = await chat(gw, key, {
      model: 'native/claude-plain',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      max_tokens: 4000,
      reasoning: { max_tokens: 2048 },
    });
    expect(r.status, r.text).toBe(200);
    expect(upstream.requests.at(-1)!.body).not.toHaveProperty('thinking');
  });

  it('`reasoning: { exclude: true }` thinks upstream and returns no reasoning, streamed or not', async () => {
    const request = {
      model: 'native/claude-think',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      max_tokens: 4000,
      reasoning: { max_tokens: 2048, exclude: true },
      tools: [TOOL],
    };
    upstream.requests.length = 0;
    const r = await chat(gw, key, request);
    expect(r.status, r.text).toBe(200);
    expect(upstream.requests.at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    const message = r.json.choices[0].message;
    expect(message, JSON.stringify(message)).not.toHaveProperty('reasoning');
    expect(message).not.toHaveProperty('reasoning_details');
    expect(message.tool_calls).toHaveLength(1);

    const s = await chatStream(gw, key, request);
    expect(s.status).toBe(200);
    const deltas = s.events.flatMap((e) => (e.choices ?? []).map((c: { delta: Record<string, unknown> }) => c.delta));
    expect(
      deltas.some((d) => 'reasoning' in d || 'reasoning_details' in d),
      JSON.stringify(deltas),
    ).toBe(false);
    expect(deltas.some((d) => Array.isArray(d.tool_calls))).toBe(true);
  });
});
