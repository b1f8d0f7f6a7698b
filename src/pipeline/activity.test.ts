import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { endpointId } from './activity.js';

describe('endpointId', () => {
  it('is the UUID-shaped start of SHA-256(model NUL provider), the same on every call', () => {
    const hex = createHash('sha256').update('openai/gpt-4o\u0000OpenAI').digest('hex');
    const expected = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
    expect(endpointId('openai/gpt-4o', 'OpenAI')).toBe(expected);
    expect(endpointId('openai/gpt-4o', 'OpenAI')).toBe(expected); // kept, not derived again
    expect(endpointId('openai/gpt-4o', 'Azure')).not.toBe(expected);
    // The separator keeps "a" + "bc" apart from "ab" + "c".
    expect(endpointId('a', 'bc')).not.toBe(endpointId('ab', 'c'));
  });

  it('stays right past the number of ids it keeps', () => {
    const first = endpointId('m/0', 'P');
    for (let i = 1; i <= 10_050; i++) endpointId(`m/${i}`, 'P');
    expect(endpointId('m/0', 'P')).toBe(first);
    const hex = createHash('sha256').update('m/10050\u0000P').digest('hex');
    expect(endpointId('m/10050', 'P').replaceAll('-', '')).toBe(hex.slice(0, 32));
  });
});
