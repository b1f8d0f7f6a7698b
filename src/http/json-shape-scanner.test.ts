import { describe, expect, it } from 'vitest';
import { JsonShapeScanner } from './json-shape-scanner.js';

const limits = { maxDepth: 4, maxElements: 10 };

/** Feeds `text` in chunks of `size` bytes; the first refusal or null. */
function scan(text: string, size = text.length, options = limits): string | null {
  const bytes = Buffer.from(text);
  const scanner = new JsonShapeScanner(options);
  for (let i = 0; i < bytes.length; i += Math.max(1, size)) {
    const problem = scanner.feed(bytes.subarray(i, i + Math.max(1, size)));
    if (problem) return problem;
  }
  return null;
}

describe('JsonShapeScanner', () => {
  it('counts depth and values outside strings only, whatever the chunking', () => {
    const tricky = JSON.stringify({ a: '[[[[[[,,,,,,,,,,,,{{{{', b: 'quote \\" and \\\\', c: ['x\\', '"', '\\\\"'] });
    for (const size of [1, 2, 3, 5, 7, tricky.length]) expect(scan(tricky, size), `chunks of ${size}`).toBeNull();
  });

  it('refuses nesting deeper than the limit, and too many values', () => {
    expect(scan('[[[[[1]]]]]')).toBe('JSON body nests deeper than 4 levels');
    expect(scan('[[[[1]]]]')).toBeNull();
    expect(scan(`[${'1,'.repeat(10)}1]`)).toBe('JSON body has more than 10 values');
    expect(scan(`[${'1,'.repeat(8)}1]`)).toBeNull();
    for (const size of [1, 3]) expect(scan('{"a":"\\\\"}[[[[[', size)).toBe('JSON body nests deeper than 4 levels');
  });

  it('an escaped backslash before a quote ends the string; an escaped quote does not', () => {
    // "\\" then structure: the string ends, the brackets count.
    expect(scan('["\\\\",[[[[1]]]]]', 1)).toBe('JSON body nests deeper than 4 levels');
    // "\"[[[[[" : all inside the string.
    expect(scan('["\\"[[[[[[["]', 1)).toBeNull();
    expect(scan('["\\"[[[[[[["]')).toBeNull();
  });
});
