import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SseParser } from '../../streaming/sse-parser.js';
import type { EndpointTarget, NormalizedUsage, StreamEvent } from '../types.js';
import { geminiAdapter } from './adapter.js';
import { GeminiStreamDecoder } from './stream-decoder.js';

/** Decodes a recorded SSE body (CRLF-separated, as Google sends it) as the stream reader does. */
function decode(name: string): StreamEvent[] {
  const parser = new SseParser();
  const events = [...parser.push(readFileSync(new URL(`./fixtures/${name}`, import.meta.url))), ...parser.end()];
  const decoder = new GeminiStreamDecoder();
  return events.map((event) => decoder.parseStreamEvent(event.data, event.event));
}

interface Assembled {
  role: unknown;
  content: string;
  reasoning: string;
  reasoningDetails: Record<string, unknown>[];
  toolCalls: Record<string, unknown>[];
  finish: string | null;
  nativeFinish: string | null;
  usage: NormalizedUsage | null;
}

function assemble(events: StreamEvent[]): Assembled {
  const out: Assembled = {
    role: undefined,
    content: '',
    reasoning: '',
    reasoningDetails: [],
    toolCalls: [],
    finish: null,
    nativeFinish: null,
    usage: null,
  };
  for (const event of events) {
    if (event.kind !== 'chunk') continue;
    out.usage = event.usage ?? out.usage;
    for (const choice of event.choices) {
      const delta = choice.delta as {
        role?: string;
        content?: string;
        reasoning?: string;
        reasoning_details?: Record<string, unknown>[];
        tool_calls?: Record<string, unknown>[];
      };
      out.role ??= delta.role;
      out.content += delta.content ?? '';
      out.reasoning += delta.reasoning ?? '';
      out.reasoningDetails.push(...(delta.reasoning_details ?? []));
      out.toolCalls.push(...(delta.tool_calls ?? []));
      if (choice.finish_reason !== null)
        [out.finish, out.nativeFinish] = [choice.finish_reason, choice.native_finish_reason];
    }
  }
  return out;
}

describe('Gemini stream decoding', () => {
  it('reads a text stream: role on the first chunk, the prompt count before the finish and the whole usage with it, no end marker', () => {
    const events = decode('stream-text.sse');
    expect(events).toHaveLength(3);
    expect(events[0]).toEqual({
      kind: 'chunk',
      upstreamId: 'WJfFaPzLBsSfkdUPq7u14Aw',
      choices: [
        { index: 0, delta: { role: 'assistant', content: 'The' }, finish_reason: null, native_finish_reason: null },
      ],
      // Before the finish, only the prompt's count: the output's is still growing.
      usage: {
        promptTokens: 9,
        completionTokens: 0,
        completionUnknown: true,
        reasoningTokens: null,
        cachedTokens: null,
      },
      systemFingerprint: null,
    });
    expect(events[1]).toMatchObject({
      choices: [{ delta: { content: ' quick brown fox jumps over' } }],
      usage: { promptTokens: 9, completionUnknown: true },
    });
    expect(events[2]).toMatchObject({
      choices: [{ delta: { content: ' the lazy dog.\n' }, finish_reason: 'stop', native_finish_reason: 'STOP' }],
      usage: { promptTokens: 9, completionTokens: 11, reasoningTokens: null, cachedTokens: null },
    });
    expect(events.some((e) => e.kind === 'done')).toBe(false); // the end of the body ends the stream
  });

  it('streams thoughts, text and whole function calls numbered across chunks', () => {
    const assembled = assemble(decode('stream-function-call.sse'));
    expect(assembled).toEqual({
      role: 'assistant',
      content: 'Let me look that up.',
      reasoning: '**Checking the weather**\n\nI need the weather tool for Paris.',
      reasoningDetails: [
        {
          type: 'reasoning.text',
          text: '**Checking the weather**\n\nI need the weather tool for Paris.',
          format: 'google-gemini-v1',
          index: 0,
        },
        {
          type: 'reasoning.encrypted',
          data: 'CiQBVKhc7nZ2mP0vX9S3lL+q8u0sE7kWZ5y',
          id: 'call_3ZjFaJ6mKc6ekdUPqL2B4Ac_0',
          format: 'google-gemini-v1',
          index: 1,
        },
      ],
      toolCalls: [
        {
          index: 0,
          id: 'call_3ZjFaJ6mKc6ekdUPqL2B4Ac_0',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"location":"Paris, France"}' },
          extra_content: { google: { thought_signature: 'CiQBVKhc7nZ2mP0vX9S3lL+q8u0sE7kWZ5y' } },
        },
        {
          index: 1,
          id: 'call_3ZjFaJ6mKc6ekdUPqL2B4Ac_1',
          type: 'function',
          function: { name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' },
        },
      ],
      // A STOP after function calls means the model wants them run.
      finish: 'tool_calls',
      nativeFinish: 'STOP',
      usage: { promptTokens: 112, completionTokens: 82, reasoningTokens: 48, cachedTokens: 64 },
    });
  });

  it('keeps a thought streamed over several events one reasoning detail, numbered per candidate', () => {
    const decoder = new GeminiStreamDecoder();
    const event = (parts: unknown[], index = 0) =>
      decoder.parseStreamEvent(JSON.stringify({ candidates: [{ content: { parts }, index }], responseId: 'r' }), null);
    const detailsOf = (e: StreamEvent) => (e.kind === 'chunk' ? e.choices[0]!.delta.reasoning_details : undefined);
    const text = (t: string, index: number) => ({ type: 'reasoning.text', text: t, format: 'google-gemini-v1', index });
    expect(detailsOf(event([{ text: 'Think ', thought: true }]))).toEqual([text('Think ', 0)]);
    expect(detailsOf(event([{ text: 'more.', thought: true }]))).toEqual([text('more.', 0)]);
    expect(detailsOf(event([{ text: 'x', thought: true }], 1))).toEqual([text('x', 0)]);
    // A signature on an (empty) text part ends the thought; the next thought is a new detail.
    expect(detailsOf(event([{ text: '', thoughtSignature: 'SIG' }]))).toEqual([
      { type: 'reasoning.encrypted', data: 'SIG', format: 'google-gemini-v1', index: 1 },
    ]);
    expect(detailsOf(event([{ text: 'Again.', thought: true }]))).toEqual([text('Again.', 2)]);
    expect(detailsOf(event([{ text: 'Answer.' }]))).toBeUndefined();
  });

  it('maps MAX_TOKENS to length', () => {
    const assembled = assemble(decode('stream-max-tokens.sse'));
    expect([assembled.content, assembled.finish, assembled.nativeFinish]).toEqual([
      'Once upon a time, in a land',
      'length',
      'MAX_TOKENS',
    ]);
  });

  it('answers a blocked prompt with a content_filter finish', () => {
    expect(decode('stream-blocked-prompt.sse')).toEqual([
      {
        kind: 'chunk',
        upstreamId: 'c6rFaOTvL4aekdUPzJe24Aw',
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', content: '' },
            finish_reason: 'content_filter',
            native_finish_reason: 'SAFETY',
          },
        ],
        usage: { promptTokens: 11, completionTokens: 0, reasoningTokens: null, cachedTokens: null },
        systemFingerprint: null,
      },
    ]);
  });

  it('reports an in-band error, classified by its code', () => {
    const events = decode('stream-error.sse');
    expect(events[1]).toMatchObject({
      kind: 'error',
      failure: {
        type: 'server',
        status: 503,
        providerCode: 'UNAVAILABLE',
        message: 'The model is overloaded. Please try again later.',
      },
    });
  });

  it('keeps role and tool numbering per candidate', () => {
    const decoder = new GeminiStreamDecoder();
    const call = (name: string) => ({ functionCall: { name, args: {} } });
    const first = decoder.parseStreamEvent(
      JSON.stringify({
        responseId: 'r',
        candidates: [
          { index: 0, content: { parts: [call('a')] } },
          { index: 1, content: { parts: [{ text: 'x' }] } },
        ],
      }),
      null,
    );
    const second = decoder.parseStreamEvent(
      JSON.stringify({
        responseId: 'r',
        candidates: [
          { index: 0, content: { parts: [call('b')] }, finishReason: 'STOP' },
          { index: 1, finishReason: 'STOP' },
        ],
      }),
      null,
    );
    expect(first).toMatchObject({
      choices: [
        { index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0 }] } },
        { index: 1, delta: { role: 'assistant', content: 'x' } },
      ],
    });
    expect(second).toMatchObject({
      choices: [
        { index: 0, delta: { tool_calls: [{ index: 1, id: 'call_r_1' }] }, finish_reason: 'tool_calls' },
        { index: 1, delta: {}, finish_reason: 'stop' },
      ],
    });
  });

  it('reads a candidate without an index as candidate 0 (protobuf JSON leaves a default out), wherever it is listed', () => {
    const decoder = new GeminiStreamDecoder();
    const event = decoder.parseStreamEvent(
      JSON.stringify({
        responseId: 'r',
        candidates: [{ index: 1, content: { parts: [{ text: 'B' }] } }, { content: { parts: [{ text: 'A' }] } }],
      }),
      null,
    );
    expect(event).toMatchObject({
      choices: [
        { index: 1, delta: { content: 'B' } },
        { index: 0, delta: { content: 'A' } },
      ],
    });
  });

  it('passes a usage-only event on and ignores empty ones', () => {
    const decoder = new GeminiStreamDecoder();
    expect(
      decoder.parseStreamEvent('{"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4}}', null),
    ).toMatchObject({ kind: 'chunk', choices: [], usage: { promptTokens: 3, completionTokens: 4 } });
    expect(decoder.parseStreamEvent('{"modelVersion":"gemini-2.0-flash"}', null)).toEqual({ kind: 'ignore' });
    expect(decoder.parseStreamEvent('', null)).toEqual({ kind: 'keepalive' });
  });

  it.each([
    ['not JSON', 'data: {'],
    ['not an object', '"text"'],
    ['a non-object candidate', '{"candidates":[7]}'],
    ['unreadable parts', '{"candidates":[{"content":{"parts":{}}}]}'],
    ['candidates that are not a list', '{"candidates":5}'],
    ['a text part whose text is not a string', '{"candidates":[{"content":{"parts":[{"text":42}]},"index":0}]}'],
  ])('reports %s as malformed', (_name, data) => {
    expect(new GeminiStreamDecoder().parseStreamEvent(data, null)).toMatchObject({
      kind: 'malformed',
      reason: expect.any(String),
    });
  });

  it('gives each stream its own decoder', () => {
    expect(geminiAdapter.openStream?.()).toBeInstanceOf(GeminiStreamDecoder);
    expect(geminiAdapter.openStream?.()).not.toBe(geminiAdapter.openStream?.());
  });

  it('round-trips streamed calls sent back with reasoning_details only, as @openrouter/ai-sdk-provider does', () => {
    const assembled = assemble(decode('stream-function-call.sse'));
    const toolCalls = assembled.toolCalls.map(({ id, type, function: fn }) => ({ id, type, function: fn }));
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: toolCalls, reasoning_details: assembled.reasoningDetails },
    ];
    const target: EndpointTarget = {
      providerId: 'gemini',
      baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
      apiKey: null,
      upstreamModel: 'gemini-2.5-flash',
      extraHeaders: {},
    };
    const body = JSON.parse(geminiAdapter.buildRequest(target, { messages }, true).body) as { contents: unknown[] };
    expect(body.contents[1]).toEqual({
      role: 'model',
      parts: [
        {
          functionCall: { name: 'get_weather', args: { location: 'Paris, France' } },
          thoughtSignature: 'CiQBVKhc7nZ2mP0vX9S3lL+q8u0sE7kWZ5y',
        },
        { functionCall: { name: 'get_time', args: { timezone: 'Europe/Paris' } } },
      ],
    });
  });

  it('round-trips streamed calls into the next request, signature included', () => {
    const assembled = assemble(decode('stream-function-call.sse'));
    const target: EndpointTarget = {
      providerId: 'gemini',
      baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
      apiKey: null,
      upstreamModel: 'gemini-2.5-flash',
      extraHeaders: {},
    };
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: assembled.content, tool_calls: assembled.toolCalls },
      { role: 'tool', tool_call_id: 'call_3ZjFaJ6mKc6ekdUPqL2B4Ac_1', content: '{"time":"14:05"}' },
      { role: 'tool', tool_call_id: 'call_3ZjFaJ6mKc6ekdUPqL2B4Ac_0', content: 'sunny' },
    ];
    const body = JSON.parse(geminiAdapter.buildRequest(target, { messages }, true).body) as { contents: unknown[] };
    expect(body.contents.slice(1)).toEqual([
      {
        role: 'model',
        parts: [
          { text: 'Let me look that up.' },
          {
            functionCall: { name: 'get_weather', args: { location: 'Paris, France' } },
            thoughtSignature: 'CiQBVKhc7nZ2mP0vX9S3lL+q8u0sE7kWZ5y',
          },
          { functionCall: { name: 'get_time', args: { timezone: 'Europe/Paris' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_time', response: { time: '14:05' } } },
          { functionResponse: { name: 'get_weather', response: { content: 'sunny' } } },
        ],
      },
    ]);
  });
});
