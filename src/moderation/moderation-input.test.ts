import { describe, expect, it } from 'vitest';
import { FLAGGED_INPUT_MAX, moderationTexts, truncateMiddle } from './moderation-input.js';

describe('moderationTexts', () => {
  it('takes user, system and developer text (strings and text parts), nothing else', () => {
    const texts = moderationTexts([
      { role: 'system', content: 'be nice' },
      { role: 'developer', content: 'dev note' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'part one' },
          { type: 'image_url', image_url: { url: 'data:...' } },
          { type: 'text', text: 'part two' },
        ],
      },
      { role: 'assistant', content: 'assistant words are not checked' },
      { role: 'tool', content: 'tool output is not checked' },
      { role: 'user', content: null },
      { role: 'user', content: '   ' },
      { role: 'user' },
    ]);
    expect(texts).toEqual(['be nice', 'dev note', 'part one', 'part two']);
  });
});

describe('truncateMiddle', () => {
  it('keeps short texts and cuts long ones in the middle to exactly the maximum', () => {
    expect(truncateMiddle('short')).toBe('short');
    const exact = 'x'.repeat(FLAGGED_INPUT_MAX);
    expect(truncateMiddle(exact)).toBe(exact);
    const long = `${'a'.repeat(100)}${'b'.repeat(100)}`;
    const cut = truncateMiddle(long);
    expect(cut).toHaveLength(FLAGGED_INPUT_MAX);
    expect(cut).toBe(`${'a'.repeat(49)}...${'b'.repeat(48)}`);
  });

  it('never splits a surrogate pair', () => {
    const cut = truncateMiddle('😀'.repeat(150), 10);
    expect(Array.from(cut)).toHaveLength(10);
    expect(cut).toBe(`${'😀'.repeat(4)}...${'😀'.repeat(3)}`);
  });
});
