import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsTooDeeply } from './json-shape.js';

describe('nestsTooDeeply', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  it('counts objects and arrays, not brackets inside strings', () => {
    expect(nestsTooDeeply(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsTooDeeply(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsTooDeeply(`{"a":"${'{['.repeat(2000)}"}`)).toBe(false);
    expect(nestsTooDeeply(`{"a":"\\"${'['.repeat(2000)}"}`)).toBe(false);
    expect(nestsTooDeeply('{"a":'.repeat(MAX_JSON_DEPTH + 1) + '1' + '}'.repeat(MAX_JSON_DEPTH + 1))).toBe(true);
  });
  it('does not look at short texts', () => {
    expect(nestsTooDeeply('[[[')).toBe(false);
  });
});
