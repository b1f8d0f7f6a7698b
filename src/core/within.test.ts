import { describe, expect, it } from 'vitest';
import { TIMED_OUT, within } from './within.js';

describe('within', () => {
  it('gives the value, rethrows a rejection in time, and says TIMED_OUT for a promise that never settles', async () => {
    expect(await within(Promise.resolve(7), 50)).toBe(7);
    await expect(within(Promise.reject(new Error('refused')), 50)).rejects.toThrow('refused');
    expect(await within(new Promise(() => undefined), 10)).toBe(TIMED_OUT);
    // A rejection after the deadline is nobody's: no unhandled rejection.
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 20));
    expect(await within(late, 5)).toBe(TIMED_OUT);
    await new Promise((resolve) => setTimeout(resolve, 40));
  });
});
