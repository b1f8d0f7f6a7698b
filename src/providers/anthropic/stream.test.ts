import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SseParser } from '../../streaming/sse-parser.js';
import type { EndpointTarget, NormalizedUsage, StreamEvent } from '../types.js';
import { CompletionAggregator } from '../../routing/stream-aggregate.js';
import { anthropicAdapter } from './adapter.js';
import { reasoningExcluded } from '../openai-input.js';
import { AnthropicStreamDecoder } from './stream-decoder.js';

/** Decodes a recorded SSE body as the stream reader does: one decoder, one call per event. */
function decode(name: string): StreamEvent[] {
  const parser = new SseParser();
  const events = [...parser.push(readFileSync(new URL(`./fixtures/${name}`, import.meta.url))), ...parser.end()];
  const decoder = new AnthropicStreamDecoder();
  return events.map((event) => decoder.parseStreamEvent(event.data, event.event));
}

interface Assembled {
  role: unknown;
  content: string;
  reasoning: string;
  toolCalls: { id: unknown; name: unknown; arguments: string }[];
  finish: string | null;
  nativeFinish: string | null;
  usage: NormalizedUsage | null;
  done: boolean;
}

/** What an OpenAI client rebuilds from the chunks. */
function assemble(events: StreamEvent[]): Assembled {
  const out: Assembled = {
    role: undefined,
    content: '',
    reasoning: '',
    toolCalls: [],
    finish: null,
    nativeFinish: null,
    usage: null,
    done: false,
  };
  for (const event of events) {
    if (event.kind === 'done') out.done = true;
    if (event.kind !== 'chunk') continue;
    out.usage = event.usage ?? out.usage;
    for (const choice of event.choices) {
      const delta = choice.delta as {
        role?: string;
        content?: string;
        reasoning?: string;
        tool_calls?: { index: number; id?: string; function: { name?: string; arguments?: string } }[];
      };
      out.role ??= delta.role;
      out.content += delta.content ?? '';
      out.reasoning += delta.reasoning ?? '';
      for (const call of delta.tool_calls ?? []) {
        const slot = (out.toolCalls[call.index] ??= { id: undefined, name: undefined, arguments: '' });
        slot.id ??= call.id;
        slot.name ??= call.function.name;
        slot.arguments += call.function.arguments ?? '';
      }
      if (choice.finish_reason !== null)
        [out.finish, out.nativeFinish] = [choice.finish_reason, choice.native_finish_reason];
    }
  }
  return out;
}

describe('Anthropic stream decoding', () => {
  it('reads a text stream: role and the prompt count first, deltas, finish with the whole usage, then done', () => {
    const events = decode('stream-text.sse');
    expect(events.map((e) => e.kind)).toEqual([
      'chunk',
      'ignore',
      'keepalive',
      'chunk',
      'chunk',
      'chunk',
      'ignore',
      'chunk',
      'done',
    ]);
    expect(events[0]).toEqual({
      kind: 'chunk',
      upstreamId: 'msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY',
      choices: [
        { index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, native_finish_reason: null },
      ],
      // The prompt's count is exact from message_start; the output's (still growing) is left unknown.
      usage: { promptTokens: 25, completionTokens: 0, completionUnknown: true, reasoningTokens: null, cachedTokens: 0 },
      systemFingerprint: null,
    });
    expect(events[7]).toMatchObject({
      choices: [{ delta: {}, finish_reason: 'stop', native_finish_reason: 'end_turn' }],
    });
    expect(assemble(events)).toEqual({
      role: 'assistant',
      content: 'Hello! How can I help you today?',
      reasoning: '',
      toolCalls: [],
      finish: 'stop',
      nativeFinish: 'end_turn',
      usage: { promptTokens: 25, completionTokens: 15, reasoningTokens: null, cachedTokens: 0 },
      done: true,
    });
  });

  it('numbers tool calls apart from text blocks and streams their arguments', () => {
    const events = decode('stream-tool-use.sse');
    const toolStart = events.find((e) => e.kind === 'chunk' && Array.isArray(e.choices[0]?.delta.tool_calls));
    expect(toolStart).toMatchObject({
      choices: [
        {
          delta: {
            tool_calls: [
              {
                index: 0,
                id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
                type: 'function',
                function: { name: 'get_weather', arguments: '' },
              },
            ],
          },
        },
      ],
    });
    const assembled = assemble(events);
    expect(assembled.content).toBe("Okay, let's check the weather for San Francisco, CA:");
    expect(assembled.toolCalls).toEqual([
      {
        id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
        name: 'get_weather',
        arguments: '{"location": "San Francisco, CA", "unit": "fahrenheit"}',
      },
      // A tool without parameters streams no fragment: "{}" is sent when its block stops.
      { id: 'toolu_01Ry6sVwQ2mF8kJd3c9ZpL1e', name: 'get_time', arguments: '{}' },
    ]);
    expect(JSON.parse(assembled.toolCalls[0]!.arguments)).toEqual({
      location: 'San Francisco, CA',
      unit: 'fahrenheit',
    });
    expect([assembled.finish, assembled.nativeFinish]).toEqual(['tool_calls', 'tool_use']);
    // Prompt usage from message_start (472 + 1200 cached), output from message_delta; its nulls are ignored.
    expect(assembled.usage).toEqual({
      promptTokens: 1672,
      completionTokens: 89,
      reasoningTokens: null,
      cachedTokens: 1200,
    });
  });

  it('streams thinking as reasoning and as reasoning_details fragments, the signature last', () => {
    const events = decode('stream-thinking.sse');
    const details = events.flatMap((e) => (e.kind === 'chunk' ? (e.choices[0]?.delta.reasoning_details ?? []) : []));
    expect(details).toEqual([
      { type: 'reasoning.text', text: '27 * 453 = 12231', format: 'anthropic-claude-v1', index: 0 },
      {
        type: 'reasoning.text',
        text: '',
        signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
        format: 'anthropic-claude-v1',
        index: 0,
      },
    ]);
    // The thinking piece carries both fields in one chunk.
    expect(events[2]).toMatchObject({
      choices: [{ delta: { reasoning: '27 * 453 = 12231', reasoning_details: [{ text: '27 * 453 = 12231' }] } }],
    });
    const assembled = assemble(events);
    expect(assembled.reasoning).toBe('27 * 453 = 12231');
    expect(assembled.content).toBe('27 * 453 = 12,231');
    expect(assembled.usage).toEqual({
      promptTokens: 85,
      completionTokens: 41,
      reasoningTokens: null,
      cachedTokens: null,
    });
  });

  it('folds a streamed answer into one signed detail per thinking block and one per redacted block', () => {
    const decoder = new AnthropicStreamDecoder();
    const aggregate = new CompletionAggregator();
    const events = [
      ['message_start', { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 5 } } }],
      [
        'content_block_start',
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'A, ' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'then B.' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'S1' } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      [
        'content_block_start',
        { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'R' } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      [
        'content_block_start',
        { type: 'content_block_start', index: 2, content_block: { type: 'thinking', thinking: '' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 2, delta: { type: 'thinking_delta', thinking: 'C.' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 2, delta: { type: 'signature_delta', signature: 'S2' } },
      ],
      ['content_block_start', { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'Done.' } }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }],
    ] as const;
    for (const [name, data] of events) {
      const event = decoder.parseStreamEvent(JSON.stringify(data), name);
      if (event.kind === 'chunk') aggregate.add(event);
    }
    const message = aggregate.result().choices[0]?.message;
    expect(message?.reasoning).toBe('A, then B.C.');
    expect(message?.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'A, then B.', format: 'anthropic-claude-v1', index: 0, signature: 'S1' },
      { type: 'reasoning.encrypted', data: 'R', format: 'anthropic-claude-v1', index: 1 },
      { type: 'reasoning.text', text: 'C.', format: 'anthropic-claude-v1', index: 2, signature: 'S2' },
    ]);
    // Sent back, the folded details are the blocks Anthropic gave, in order, before the text.
    const next = JSON.parse(
      anthropicAdapter.buildRequest(
        { providerId: 'a', baseUrl: 'https://api.anthropic.com', apiKey: null, upstreamModel: 'c', extraHeaders: {} },
        { messages: [{ role: 'user', content: 'Q' }, { ...message }] },
        false,
      ).body,
    ) as { messages: { content: unknown[] }[] };
    expect(next.messages[1]?.content).toEqual([
      { type: 'thinking', thinking: 'A, then B.', signature: 'S1' },
      { type: 'redacted_thinking', data: 'R' },
      { type: 'thinking', thinking: 'C.', signature: 'S2' },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('streams no reasoning when the caller excludes it', () => {
    const parser = new SseParser();
    const raw = readFileSync(new URL('./fixtures/stream-thinking.sse', import.meta.url));
    const decoder = new AnthropicStreamDecoder({ excludeReasoning: true });
    const events = [...parser.push(raw), ...parser.end()].map((e) => decoder.parseStreamEvent(e.data, e.event));
    const deltas = events.flatMap((e) => (e.kind === 'chunk' ? e.choices.map((c) => c.delta) : []));
    expect(deltas.some((d) => 'reasoning' in d || 'reasoning_details' in d)).toBe(false);
    expect(assemble(events).content).toBe('27 * 453 = 12,231');
    // What the adapter reads from the request body to decide it.
    expect(reasoningExcluded({ reasoning: { effort: 'high', exclude: true } })).toBe(true);
    expect(reasoningExcluded({ include_reasoning: false })).toBe(true);
    expect(reasoningExcluded({ reasoning: { exclude: false } })).toBe(false);
    expect(reasoningExcluded(undefined)).toBe(false);
  });

  it.each([
    ['max_tokens', 'length'],
    ['stop_sequence', 'stop'],
    ['refusal', 'content_filter'],
  ])('maps a streamed stop_reason %s to %s', (native, normalized) => {
    const decoder = new AnthropicStreamDecoder();
    const event = decoder.parseStreamEvent(
      `{"type":"message_delta","delta":{"stop_reason":"${native}","stop_sequence":null},"usage":{"output_tokens":3}}`,
      'message_delta',
    );
    expect(event).toMatchObject({
      kind: 'chunk',
      choices: [{ finish_reason: normalized, native_finish_reason: native }],
    });
  });

  it('reports an in-band error event, classified', () => {
    const events = decode('stream-overloaded.sse');
    expect(events.at(-1)).toEqual({
      kind: 'error',
      failure: {
        type: 'server',
        status: null,
        message: 'Overloaded',
        providerCode: 'overloaded_error',
        retryAfterMs: null,
        raw: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      },
    });
    expect(assemble(events).content).toBe('Once upon');
  });

  it('reads pings and blank data as keep-alives, and ignores event types it does not know', () => {
    const decoder = new AnthropicStreamDecoder();
    expect(decoder.parseStreamEvent('{"type": "ping"}', 'ping')).toEqual({ kind: 'keepalive' });
    expect(decoder.parseStreamEvent(' ', null)).toEqual({ kind: 'keepalive' });
    expect(decoder.parseStreamEvent('{"type":"message_annotation","data":{}}', 'message_annotation')).toEqual({
      kind: 'ignore',
    });
  });

  it.each([
    ['not JSON', '{"type":'],
    ['not an object', '[1,2]'],
    ['message_start without a message', '{"type":"message_start"}'],
    ['a block start without an index', '{"type":"content_block_start","content_block":{"type":"text","text":""}}'],
    [
      'arguments for a block never started',
      '{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{}"}}',
    ],
  ])('reports %s as malformed', (_name, data) => {
    expect(new AnthropicStreamDecoder().parseStreamEvent(data, null)).toMatchObject({
      kind: 'malformed',
      reason: expect.any(String),
    });
  });

  it('gives each stream its own decoder', () => {
    const first = anthropicAdapter.openStream?.();
    const second = anthropicAdapter.openStream?.();
    expect(first).toBeInstanceOf(AnthropicStreamDecoder);
    expect(first).not.toBe(second);
    // The stateless entry point reads events that need no context.
    expect(anthropicAdapter.parseStreamEvent('{"type":"message_stop"}', 'message_stop')).toEqual({ kind: 'done' });
  });

  it('round-trips streamed tool calls into the next request', () => {
    const assembled = assemble(decode('stream-tool-use.sse'));
    const target: EndpointTarget = {
      providerId: 'anthropic',
      baseUrl: 'https://api.anthropic.com',
      apiKey: null,
      upstreamModel: 'claude',
      extraHeaders: {},
    };
    const tool_calls = assembled.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
    const next = anthropicAdapter.buildRequest(
      target,
      {
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: assembled.content, tool_calls },
        ],
      },
      false,
    );
    const messages = (JSON.parse(next.body) as { messages: { content: unknown[] }[] }).messages;
    expect(messages[1]?.content.slice(1)).toEqual([
      {
        type: 'tool_use',
        id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
        name: 'get_weather',
        input: { location: 'San Francisco, CA', unit: 'fahrenheit' },
      },
      { type: 'tool_use', id: 'toolu_01Ry6sVwQ2mF8kJd3c9ZpL1e', name: 'get_time', input: {} },
    ]);
  });
});
