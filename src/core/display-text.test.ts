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
    // Those a list by hand missed (outside re-check): every default-ignorable or format character.
    for (const blank of ['\u180b', '\u{1d173}\u{1d17a}', '\u{1bca0}', '\ufff9', '\u206a', '\u{13430}', '\u{16fe4}'])
      expect(displayText(blank), JSON.stringify(blank)).toBe('');
    // Mongolian keeps its vowel separator; a flag built from tags and ❤️ keep theirs.
    for (const kept of ['ᠭᠣᠯ\u180eᠠ', '🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}', '❤\ufe0f', '👨‍👩‍👧'])
      expect(displayText(kept)).toBe(kept);
  });

  it('turns controls and line separators into single spaces, trimmed', () => {
    expect(displayText(' one\r\ntwo\u0085three\u2028four\t\tfive ')).toBe('one two three four five');
  });

  it('keeps the text people write: accents, scripts, emoji', () => {
    expect(displayText('Café 東京 مرحبا 👩‍💻')).toBe('Café 東京 مرحبا 👩‍💻');
  });
});
