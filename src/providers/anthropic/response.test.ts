import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { NormalizedCompletion } from '../types.js';
import { anthropicAdapter } from './adapter.js';
import { normalizeAnthropicStopReason } from './finish-reason.js';
import { parseAnthropicMessage } from './parse-completion.js';
import { mergeAnthropicUsage, parseAnthropicUsage } from './usage.js';

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;
}

function parsed(json: unknown): NormalizedCompletion {
  const result = anthropicAdapter.parseResponse(json);
  if ('kind' in result) throw new Error(result.reason);
  return result;
}

describe('anthropicAdapter.parseResponse', () => {
  it('normalizes a text message', () => {
    expect(parsed(fixture('message-text.json'))).toEqual({
      upstreamId: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello! How can I help you today?' },
          finish_reason: 'stop',
          native_finish_reason: 'end_turn',
        },
      ],
      usage: { promptTokens: 12, completionTokens: 12, reasoningTokens: null, cachedTokens: 0 },
      systemFingerprint: null,
    });
  });

  it('turns tool_use blocks into OpenAI tool calls with JSON string arguments', () => {
    const completion = parsed(fixture('message-tool-use.json'));
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: "I'll check the current weather in Paris for you.",
        tool_calls: [
          {
            id: 'toolu_01A09q90qw90lq917835lq9',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' },
          },
          { id: 'toolu_01B7s6H2dD9zKq3Wm1e5xY', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_use',
    });
    // input 384 + cache writes 120 + cache reads 2048; the reads are the cached part.
    expect(completion.usage).toEqual({
      promptTokens: 2552,
      completionTokens: 92,
      reasoningTokens: null,
      cachedTokens: 2048,
      cacheWriteTokens: 120,
    });
  });

  it('gives null content when the answer is only tool calls', () => {
    const json = fixture('message-tool-use.json');
    json.content = (json.content as Record<string, unknown>[]).filter((block) => block.type === 'tool_use');
    expect(parsed(json).choices[0]?.message.content).toBeNull();
  });

  it('gives thinking as reasoning and each thinking block, signed, and redacted block as reasoning_details', () => {
    const completion = parsed(fixture('message-thinking-max-tokens.json'));
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: '2, 3, 5, 7, 11, 13',
        reasoning: 'The user wants a long list of primes. I will start from 2.',
        reasoning_details: [
          {
            type: 'reasoning.text',
            text: 'The user wants a long list of primes. I will start from 2.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
            format: 'anthropic-claude-v1',
            index: 0,
          },
          {
            type: 'reasoning.encrypted',
            data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP',
            format: 'anthropic-claude-v1',
            index: 1,
          },
        ],
      },
      finish_reason: 'length',
      native_finish_reason: 'max_tokens',
    });
    expect(completion.usage).toEqual({
      promptTokens: 40,
      completionTokens: 64,
      reasoningTokens: null,
      cachedTokens: null,
    });
  });

  it('numbers reasoning blocks apart from text and tool blocks, and leaves them out when the caller excludes them', () => {
    const json = {
      ...fixture('message-text.json'),
      content: [
        { type: 'redacted_thinking', data: 'R1' },
        { type: 'text', text: 'Checking.' },
        { type: 'thinking', thinking: 'Then the tool.', signature: 'S2' },
        { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} },
      ],
    };
    expect(parsed(json).choices[0]?.message.reasoning_details).toEqual([
      { type: 'reasoning.encrypted', data: 'R1', format: 'anthropic-claude-v1', index: 0 },
      { type: 'reasoning.text', text: 'Then the tool.', signature: 'S2', format: 'anthropic-claude-v1', index: 1 },
    ]);
    const excluded = parseAnthropicMessage(json, { excludeReasoning: true });
    if ('kind' in excluded) throw new Error(excluded.reason);
    expect(excluded.choices[0]?.message).not.toHaveProperty('reasoning');
    expect(excluded.choices[0]?.message).not.toHaveProperty('reasoning_details');
    expect(excluded.choices[0]?.message.content).toBe('Checking.');
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['some_future_reason', 'some_future_reason'],
  ])('maps stop_reason %s to %s and keeps the native value', (native, normalized) => {
    expect(normalizeAnthropicStopReason(native)).toBe(normalized);
    const completion = parsed({ ...fixture('message-text.json'), stop_reason: native });
    expect(completion.choices[0]).toMatchObject({ finish_reason: normalized, native_finish_reason: native });
  });

  it('reports a null finish and usage when Anthropic sends none', () => {
    const completion = parsed({ ...fixture('message-text.json'), stop_reason: null, usage: undefined });
    expect(completion.choices[0]).toMatchObject({ finish_reason: null, native_finish_reason: null });
    expect(completion.usage).toBeNull();
  });

  it.each([
    ['not an object', 'oops'],
    ['null', null],
    ['no content', { id: 'msg_1', type: 'message', role: 'assistant' }],
    ['a non-object block', { ...fixture('message-text.json'), content: ['hello'] }],
    [
      'a tool_use without a name',
      { ...fixture('message-text.json'), content: [{ type: 'tool_use', id: 'toolu_1', input: {} }] },
    ],
    [
      'an error body with status 200',
      { type: 'error', error: { type: 'api_error', message: 'Internal server error' } },
    ],
  ])('rejects %s as malformed', (_name, json) => {
    expect(anthropicAdapter.parseResponse(json)).toMatchObject({ kind: 'malformed', reason: expect.any(String) });
  });
});

describe('Anthropic usage', () => {
  it('adds cache reads and writes to the prompt', () => {
    expect(
      parseAnthropicUsage({
        input_tokens: 10,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 100,
        output_tokens: 3,
      }),
    ).toEqual({
      promptTokens: 115,
      completionTokens: 3,
      reasoningTokens: null,
      cachedTokens: 100,
      cacheWriteTokens: 5,
    });
    expect(parseAnthropicUsage({ service_tier: 'standard' })).toBeNull();
    expect(parseAnthropicUsage('12')).toBeNull();
  });

  it('lets the final counts of a stream win, ignoring nulls', () => {
    const start = { input_tokens: 472, cache_read_input_tokens: 1200, output_tokens: 2 };
    expect(mergeAnthropicUsage(start, { input_tokens: null, output_tokens: 89 })).toEqual({
      input_tokens: 472,
      cache_read_input_tokens: 1200,
      output_tokens: 89,
    });
    expect(mergeAnthropicUsage(start, { input_tokens: 500, output_tokens: 90 })).toMatchObject({
      input_tokens: 500,
      output_tokens: 90,
    });
    expect(mergeAnthropicUsage(start, undefined)).toEqual({ input_tokens: 472, cache_read_input_tokens: 1200 });
  });

  it("never takes message_start's placeholder output count for the answer's (a message_delta without usage)", () => {
    const start = { input_tokens: 10, output_tokens: 1 };
    expect(mergeAnthropicUsage(start, { output_tokens: 600 }).output_tokens).toBe(600);
    const usage = parseAnthropicUsage(mergeAnthropicUsage(start, {}));
    expect(usage?.promptTokens).toBe(10);
    expect(usage?.completionUnknown).toBe(true);
  });
});
