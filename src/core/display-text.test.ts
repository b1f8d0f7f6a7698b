import { describe, expect, it } from 'vitest';
import { displayText } from './display-text.js';

describe('displayText', () => {
  it('removes what would make a name read as something else or look empty', () => {
    expect(displayText('Budget helper \u202egro.elgoog//:sptth')).toBe('Budget helper gro.elgoog//:sptth');
    expect(displayText('a\u2066b\u2069c\u200bd\ufeffe\u200ef')).toBe('abcdef');
    expect(displayText('\u200b\u200b')).toBe('');
    expect(displayText('\u200d \u200c')).toBe('');
    // Others that show nothing (outside check: each was accepted as a whole key name).
    for (const blank of ['\u3164', '\u2800', '\u00ad', '\u115f\u1160', '\udb40\udc41', '\u034f', '\ufe0f', '\u061c'])
      expect(displayText(blank), JSON.stringify(blank)).toBe('');
    expect(displayText('a\u061cb\u00adc')).toBe('abc');
  });

  it('turns controls and line separators into single spaces, trimmed', () => {
    expect(displayText(' one\r\ntwo\u0085three\u2028four\t\tfive ')).toBe('one two three four five');
  });

  it('keeps the text people write: accents, scripts, emoji', () => {
    expect(displayText('Café 東京 مرحبا 👩‍💻')).toBe('Café 東京 مرحبا 👩‍💻');
  });
});
