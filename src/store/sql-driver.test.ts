import { describe, expect, it } from 'vitest';
import { placeholderRows, placeholderTuple } from './sql-driver.js';

describe('placeholders', () => {
  it('builds one tuple and multi-row VALUES lists', () => {
    expect(placeholderTuple(3)).toBe('(?, ?, ?)');
    expect(placeholderRows(3, 1)).toBe('(?, ?, ?)');
    expect(placeholderRows(2, 3)).toBe('(?, ?), (?, ?), (?, ?)');
  });

  it('gives the same text for the same shape however often it is asked', () => {
    const first = placeholderRows(13, 20);
    expect(placeholderRows(13, 20)).toBe(first);
    expect(first.split('), (')).toHaveLength(20);
    expect(placeholderRows(13, 21).split('), (')).toHaveLength(21);
  });
});
