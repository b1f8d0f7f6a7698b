import { describe, expect, it } from 'vitest';
import { normalizeAnthropicStopReason } from '../anthropic/finish-reason.js';
import { normalizeOpenAiFinishReason, sanitizeNativeFinishReason } from './finish-reason.js';
import { parseOpenAiCompletion } from './parse-completion.js';
import { parseOpenAiStreamEvent } from './parse-stream-event.js';

describe('finish reasons from upstreams', () => {
  it.each([
    ['stop', 'stop'],
    ['length', 'length'],
    ['tool_calls', 'tool_calls'],
    ['content_filter', 'content_filter'],
    ['function_call', 'tool_calls'],
    // Other servers' names for them, in any case.
    ['eos_token', 'stop'],
    ['End_Turn', 'stop'],
    ['STOP', 'stop'],
    ['max_tokens', 'length'],
    ['MAX_TOKENS', 'length'],
    ['model_length', 'length'],
    ['tool_use', 'tool_calls'],
    ['SAFETY', 'content_filter'],
    ['error', 'error'],
    ['abort', 'error'], // vLLM: its engine aborted the request (isProviderError: a cut answer)
    ['ERROR', 'ERROR'], // only the exact "error" is a provider failing (stream-reader.ts, isProviderError)
    ['some_future_reason', 'some_future_reason'], // unknown but a plain short token: passes through
    ['constructor', 'constructor'],
  ])('normalizes a known value and keeps a plain unknown one: %s → %s', (raw, normalized) => {
    expect(normalizeOpenAiFinishReason(raw)).toBe(normalized);
  });

  it.each([['st\u0000op'], ['stop\n'], ['stop sequence'], ['<eos>'], ['x'.repeat(41)], ['stop;drop table'], ['é']])(
    'turns junk %j into "error"',
    (raw) => {
      expect(normalizeOpenAiFinishReason(raw)).toBe('error');
    },
  );

  it('reads null and an empty string as no finish reason', () => {
    expect(normalizeOpenAiFinishReason(null)).toBeNull();
    expect(normalizeOpenAiFinishReason('')).toBeNull();
  });

  it('applies the same rule to Anthropic stop reasons it does not know (and no prototype keys)', () => {
    expect(normalizeAnthropicStopReason('end_turn')).toBe('stop');
    expect(normalizeAnthropicStopReason('some_future_reason')).toBe('some_future_reason');
    expect(normalizeAnthropicStopReason('bad\u0000reason')).toBe('error');
    expect(normalizeAnthropicStopReason('constructor')).toBe('constructor');
    expect(normalizeAnthropicStopReason('__proto__')).toBe('__proto__');
  });

  it('sanitizes a native value: control characters stripped, at most 100 characters', () => {
    expect(sanitizeNativeFinishReason(null)).toBeNull();
    expect(sanitizeNativeFinishReason('STOP')).toBe('STOP');
    expect(sanitizeNativeFinishReason('st\u0000op\r\n')).toBe('stop');
    expect(sanitizeNativeFinishReason('\u0000\u0001')).toBeNull();
    expect(sanitizeNativeFinishReason('a'.repeat(500))).toBe('a'.repeat(100));
    expect(sanitizeNativeFinishReason(`${'a'.repeat(99)}😀😀`)).toBe(`${'a'.repeat(99)}😀`);
  });

  it('never hands a NUL byte on as the normalized reason (stream chunk and completion)', () => {
    const event = parseOpenAiStreamEvent(
      JSON.stringify({ id: 'x', choices: [{ index: 0, delta: {}, finish_reason: 'st\u0000op' }] }),
      null,
    );
    expect(event.kind === 'chunk' && event.choices[0]!.finish_reason).toBe('error');
    const completion = parseOpenAiCompletion({
      id: 'x',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'st\u0000op' }],
    });
    expect('choices' in completion && completion.choices[0]!.finish_reason).toBe('error');
  });
});
