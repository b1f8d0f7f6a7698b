import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { NormalizedCompletion } from '../types.js';
import { geminiAdapter } from './adapter.js';
import { normalizeGeminiFinishReason } from './finish-reason.js';
import { parseGeminiUsage } from './usage.js';

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;
}

function parsed(json: unknown): NormalizedCompletion {
  const result = geminiAdapter.parseResponse(json);
  if ('kind' in result) throw new Error(result.reason);
  return result;
}

describe('geminiAdapter.parseResponse', () => {
  it('normalizes a text answer, counting thinking tokens as completion and reasoning', () => {
    expect(parsed(fixture('generate-text.json'))).toEqual({
      upstreamId: 'mMjFaOeWHc2ZkdUPk5_S4Aw',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'AI learns patterns from examples, then uses them to make predictions.',
          },
          finish_reason: 'stop',
          native_finish_reason: 'STOP',
        },
      ],
      usage: { promptTokens: 8, completionTokens: 261, reasoningTokens: 248, cachedTokens: null },
      systemFingerprint: null,
    });
  });

  it('turns functionCall parts into tool calls and a STOP into tool_calls', () => {
    const completion = parsed(fixture('generate-function-call.json'));
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_8ZjFaMLdKqOfkdUP2ZmN0Ao_0',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' },
            extra_content: {
              google: { thought_signature: 'CiIBVKhc7oDPpCaXyJKKssjqr4g3JNOSgJ/M2V+1THC1icsWCmQBVKhc7v9V0zZ' },
            },
          },
          { id: 'call_8ZjFaMLdKqOfkdUP2ZmN0Ao_1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
        // Also as OpenRouter gives it, for clients that keep only reasoning_details (@openrouter/ai-sdk-provider).
        reasoning_details: [
          {
            type: 'reasoning.encrypted',
            data: 'CiIBVKhc7oDPpCaXyJKKssjqr4g3JNOSgJ/M2V+1THC1icsWCmQBVKhc7v9V0zZ',
            id: 'call_8ZjFaMLdKqOfkdUP2ZmN0Ao_0',
            format: 'google-gemini-v1',
            index: 0,
          },
        ],
      },
      finish_reason: 'tool_calls',
      native_finish_reason: 'STOP',
    });
    expect(completion.usage).toEqual({
      promptTokens: 2106,
      completionTokens: 127,
      reasoningTokens: 96,
      cachedTokens: 2048,
    });
  });

  it('answers a blocked prompt with content_filter and the block reason', () => {
    const completion = parsed(fixture('generate-blocked-prompt.json'));
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: '' },
        finish_reason: 'content_filter',
        native_finish_reason: 'PROHIBITED_CONTENT',
      },
    ]);
    expect(completion.usage).toEqual({
      promptTokens: 9,
      completionTokens: 0,
      reasoningTokens: null,
      cachedTokens: null,
    });
  });

  it('answers a candidate stopped for safety, without content, with content_filter', () => {
    expect(parsed(fixture('generate-safety.json')).choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: '' },
        finish_reason: 'content_filter',
        native_finish_reason: 'SAFETY',
      },
    ]);
  });

  it('keeps thought summaries as reasoning and reads several candidates', () => {
    const json = {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Thinking it over', thought: true }, { text: 'Yes.' }] },
          finishReason: 'STOP',
          index: 0,
        },
        { content: { role: 'model', parts: [{ text: 'No.' }] }, finishReason: 'MAX_TOKENS', index: 1 },
      ],
      responseId: 'r1',
    };
    const completion = parsed(json);
    expect(completion.choices.map((c) => [c.index, c.message, c.finish_reason])).toEqual([
      [
        0,
        {
          role: 'assistant',
          content: 'Yes.',
          reasoning: 'Thinking it over',
          reasoning_details: [
            { type: 'reasoning.text', text: 'Thinking it over', format: 'google-gemini-v1', index: 0 },
          ],
        },
        'stop',
      ],
      [1, { role: 'assistant', content: 'No.' }, 'length'],
    ]);
    expect(completion.usage).toBeNull();
  });

  it('gives thoughts and every signature as google-gemini-v1 reasoning_details, in part order', () => {
    const json = {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'Step one. ', thought: true },
              { text: 'Step two.', thought: true },
              { text: 'Checking.', thoughtSignature: 'SIG-TEXT' },
              { functionCall: { name: 'a', args: {} } },
              { functionCall: { id: 'fc-9', name: 'b', args: {} }, thoughtSignature: 'SIG-B' },
            ],
          },
          finishReason: 'STOP',
        },
      ],
      responseId: 'r2',
    };
    const message = parsed(json).choices[0]!.message;
    expect(message.reasoning).toBe('Step one. Step two.');
    expect(message.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'Step one. Step two.', format: 'google-gemini-v1', index: 0 },
      { type: 'reasoning.encrypted', data: 'SIG-TEXT', format: 'google-gemini-v1', index: 1 },
      { type: 'reasoning.encrypted', data: 'SIG-B', id: 'fc-9', format: 'google-gemini-v1', index: 2 },
    ]);
    expect(message.tool_calls).toMatchObject([{ id: 'call_r2_0' }, { id: 'fc-9' }]);
    // An answer without thoughts or signatures has no reasoning_details at all.
    expect(parsed(fixture('generate-text.json')).choices[0]!.message).not.toHaveProperty('reasoning_details');
  });

  it.each([
    ['STOP', false, 'stop'],
    ['STOP', true, 'tool_calls'],
    ['MAX_TOKENS', false, 'length'],
    ['MAX_TOKENS', true, 'length'],
    ['SAFETY', false, 'content_filter'],
    ['RECITATION', false, 'content_filter'],
    ['BLOCKLIST', false, 'content_filter'],
    ['PROHIBITED_CONTENT', false, 'content_filter'],
    ['SPII', false, 'content_filter'],
    ['IMAGE_SAFETY', false, 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', false, 'error'],
    ['LANGUAGE', false, 'error'],
    ['OTHER', false, 'error'],
    ['FINISH_REASON_UNSPECIFIED', false, 'stop'],
  ] as const)('maps finishReason %s (tool calls: %s) to %s', (native, hasToolCalls, normalized) => {
    expect(normalizeGeminiFinishReason(native, hasToolCalls)).toBe(normalized);
  });

  it('keeps the native finish reason next to the normalized one', () => {
    const json = fixture('generate-text.json');
    (json.candidates as Record<string, unknown>[])[0]!.finishReason = 'RECITATION';
    expect(parsed(json).choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      native_finish_reason: 'RECITATION',
    });
    expect(normalizeGeminiFinishReason(null, false)).toBeNull();
  });

  it.each([
    ['not an object', 'oops'],
    ['no candidates and no block reason', { usageMetadata: { promptTokenCount: 1 } }],
    ['a non-object candidate', { candidates: ['x'] }],
    ['parts that are not an array', { candidates: [{ content: { parts: 'x' } }] }],
    ['a functionCall without a name', { candidates: [{ content: { parts: [{ functionCall: { args: {} } }] } }] }],
    ['an error body with status 200', { error: { code: 500, message: 'Internal error', status: 'INTERNAL' } }],
  ])('rejects %s as malformed', (_name, json) => {
    expect(geminiAdapter.parseResponse(json)).toMatchObject({ kind: 'malformed', reason: expect.any(String) });
  });
});

describe('Gemini usage', () => {
  it('adds tool-use prompt tokens to the prompt and thoughts to the completion', () => {
    expect(
      parseGeminiUsage({
        promptTokenCount: 100,
        toolUsePromptTokenCount: 20,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 7,
        cachedContentTokenCount: 64,
      }),
    ).toEqual({
      promptTokens: 120,
      completionTokens: 12,
      reasoningTokens: 7,
      cachedTokens: 64,
    });
    expect(parseGeminiUsage({ totalTokenCount: 3 })).toBeNull();
    expect(parseGeminiUsage(undefined)).toBeNull();
  });
});
