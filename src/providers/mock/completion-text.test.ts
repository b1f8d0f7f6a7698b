import { describe, expect, it } from 'vitest';
import {
  countPromptTokens,
  mockCompletionText,
  mockPieces,
  planCompletion,
  splitContent,
  stopSequencesOf,
} from './completion-text.js';

describe('mock completion text', () => {
  it('cycles a fixed sentence one word per piece', () => {
    expect(mockPieces(3)).toEqual(['The', ' quick', ' brown']);
    expect(mockCompletionText(11)).toBe('The quick brown fox jumps over the lazy dog. The quick');
    expect(mockPieces(0)).toEqual([]);
  });

  it('splits scripted content into pieces that join back exactly', () => {
    for (const text of ['Hello, world!', '  leading and trailing  ', 'line\nbreak', '', '👋 emoji']) {
      expect(splitContent(text).join('')).toBe(text);
    }
    expect(splitContent('a b c')).toEqual(['a', ' b', ' c']);
  });

  it('plans 40 tokens by default, cut by max tokens into finish_reason length', () => {
    expect(planCompletion({ completionTokens: null, content: null }, null)).toMatchObject({ finishReason: 'stop' });
    expect(planCompletion({ completionTokens: null, content: null }, null).pieces).toHaveLength(40);
    expect(planCompletion({ completionTokens: null, content: null }, 10)).toMatchObject({ finishReason: 'length' });
    expect(planCompletion({ completionTokens: 5, content: null }, 10).pieces).toHaveLength(5);
    expect(planCompletion({ completionTokens: null, content: 'a b c' }, 2)).toEqual({
      pieces: ['a', ' b'],
      finishReason: 'length',
    });
    expect(planCompletion({ completionTokens: 9, content: 'a b c' }, null)).toEqual({
      pieces: ['a', ' b', ' c'],
      finishReason: 'stop',
    });
  });

  it('ends before the first stop sequence, mid-piece too, with finish_reason stop', () => {
    const plan = (stop: string[], max: number | null = null) =>
      planCompletion({ completionTokens: null, content: null }, max, stop);
    expect(plan(['fox'])).toEqual({ pieces: ['The', ' quick', ' brown', ' '], finishReason: 'stop' });
    expect(plan(['lazy', 'quick'])).toEqual({ pieces: ['The', ' '], finishReason: 'stop' });
    expect(plan(['The'])).toEqual({ pieces: [], finishReason: 'stop' });
    expect(plan(['ick br'])).toEqual({ pieces: ['The', ' qu'], finishReason: 'stop' });
    // Not in the text (or past max tokens): no effect.
    expect(plan(['zebra']).pieces).toHaveLength(40);
    expect(plan(['dog'], 3)).toEqual({ pieces: ['The', ' quick', ' brown'], finishReason: 'length' });
    expect(plan(['', 'dog'], null).pieces.join('')).toBe('The quick brown fox jumps over the lazy ');
    expect(stopSequencesOf('x')).toEqual(['x']);
    expect(stopSequencesOf(['x', 1, null])).toEqual(['x']);
    expect(stopSequencesOf(undefined)).toEqual([]);
  });

  it('counts prompt tokens with per-message overhead, ignoring non-text parts', () => {
    const countChars = (text: string) => text.length;
    const messages = [
      { role: 'user', content: 'abcd' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'xy' },
          { type: 'image_url', image_url: { url: 'data:...' } },
        ],
        name: 'bob',
      },
      { role: 'assistant', content: null, tool_calls: [] },
      'garbage',
    ];
    expect(countPromptTokens(messages, countChars)).toBe(3 + (3 + 4) + (3 + 2 + 1 + 3) + 3 + 3);
  });
});
