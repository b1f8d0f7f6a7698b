import { describe, expect, it } from 'vitest';
import { PatternModerator } from './pattern-moderator.js';

const rules = [
  { pattern: '\\bforbidden\\b', flags: 'i', reason: 'forbidden word' },
  { pattern: 'secret-\\d+', flags: '', reason: 'secret code' },
  { pattern: 'FORBIDDEN', flags: '', reason: 'shouting' },
];

describe('PatternModerator', () => {
  const moderator = new PatternModerator(rules);

  it('passes text that matches nothing', async () => {
    expect(await moderator.check({ texts: ['hello', 'a forbiddenness is fine'], model: 'm' })).toEqual({
      flagged: false,
    });
    expect(await moderator.check({ texts: [], model: 'm' })).toEqual({ flagged: false });
  });

  it('flags a match, reporting the first flagged text and every matching reason once, in rule order', async () => {
    const verdict = await moderator.check({
      texts: ['fine', 'this is FORBIDDEN', 'forbidden again, secret-42'],
      model: 'm',
    });
    expect(verdict).toEqual({
      flagged: true,
      reasons: ['forbidden word', 'shouting', 'secret code'],
      flaggedInput: 'this is FORBIDDEN',
    });
  });

  it('honours flags: an empty flag string is case-sensitive', async () => {
    expect(await moderator.check({ texts: ['SECRET-1'], model: 'm' })).toEqual({ flagged: false });
    expect(await moderator.check({ texts: ['secret-1'], model: 'm' })).toMatchObject({
      flagged: true,
      reasons: ['secret code'],
    });
  });

  it('is stateless between calls (no lastIndex carry-over)', async () => {
    const global = new PatternModerator([{ pattern: 'x', flags: 'gi', reason: 'x' }]);
    for (let i = 0; i < 3; i++) expect((await global.check({ texts: ['x'], model: 'm' })).flagged).toBe(true);
  });

  it('names itself Tollgate unless told otherwise, and throws on an invalid pattern', () => {
    expect(moderator.name).toBe('Tollgate');
    expect(new PatternModerator(rules, 'Acme policy').name).toBe('Acme policy');
    expect(() => new PatternModerator([{ pattern: '(unclosed', flags: '', reason: 'r' }])).toThrow(SyntaxError);
  });
});
