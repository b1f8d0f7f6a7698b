import { describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../config/load-config.js';
import { MODERATED_TEXT_MAX, PatternModerator } from './pattern-moderator.js';
import { nestedQuantifierProblem } from './regex-safety.js';

const CATASTROPHIC = '^(\\w+\\s?)+$';
/** 39 word characters and one that ends every way of matching: 2^39 splits to backtrack through. */
const ADVERSARIAL = `${'a'.repeat(39)}!`;

describe('moderation patterns cannot hang the event loop (ReDoS)', () => {
  it('matches the catastrophic pattern on an adversarial 40-character input in linear time (V8 fallback)', async () => {
    // Flags without i/u/v: Node 20's linear engine takes the pattern once it backtracks excessively.
    const moderator = new PatternModerator([{ pattern: CATASTROPHIC, flags: '', reason: 'words' }]);
    const started = performance.now();
    expect(await moderator.check({ texts: [ADVERSARIAL], model: 'm' })).toEqual({ flagged: false });
    expect(performance.now() - started).toBeLessThan(1000);
    // The answers are the usual ones.
    expect(await moderator.check({ texts: ['just some words'], model: 'm' })).toMatchObject({
      flagged: true,
      reasons: ['words'],
    });
  });

  it('checks only the first MODERATED_TEXT_MAX characters of a text, and reports the whole text', async () => {
    const moderator = new PatternModerator([{ pattern: 'forbidden', flags: 'i', reason: 'word' }]);
    const head = `${'x'.repeat(MODERATED_TEXT_MAX - 9)}forbidden`;
    expect(await moderator.check({ texts: [`${head}tail`], model: 'm' })).toEqual({
      flagged: true,
      reasons: ['word'],
      flaggedInput: `${head}tail`,
    });
    expect(await moderator.check({ texts: [`${'x'.repeat(MODERATED_TEXT_MAX - 8)}forbidden`], model: 'm' })).toEqual({
      flagged: false,
    });
  });

  it.each([
    [CATASTROPHIC, ''],
    [CATASTROPHIC, 'i'],
    ['(a+)+', ''],
    ['(a*)*b', 'i'],
    ['(?:a|b+){2,}', ''],
    ['(?<word>\\w+\\s)*end', 'u'],
    ['((ab)+c)+', ''],
    ['(\\s?\\w)+', ''], // harmless, but of the refused shape
    ['(x{1,3}){2}', ''],
    ['(a+?)+?', ''],
  ])('refuses the nested quantifier in %s (flags %j)', (pattern, flags) => {
    expect(nestedQuantifierProblem(pattern, flags)).toMatch(/exponential/);
  });

  it.each([
    ['\\bforbidden\\b', 'i'],
    ['secret-\\d+', ''],
    ['^[\\w\\s]+$', 'i'],
    ['(ab)+', ''],
    ['(a+)?', ''],
    ['(a+){1}', ''],
    ['(a+)b+', ''],
    ['[(a+)]+', ''],
    ['\\(a+\\)+', ''],
    ['(?:https?://)', ''],
    ['\\p{L}{2,}(x)+', 'u'],
    ['(?<name>x)\\k<name>+', ''],
    ['a{2}(b)*', ''],
    ['[[a-z]--[aeiou]]+(b)+', 'v'],
    ['(?=a+)b', ''],
    ['x{', ''],
  ])('accepts %s (flags %j)', (pattern, flags) => {
    expect(nestedQuantifierProblem(pattern, flags)).toBeNull();
  });

  it('refuses such a pattern at config time, with every other problem', () => {
    const yaml = `
providers:
  - { id: p, name: P, kind: openai, base_url: "http://127.0.0.1:1/v1" }
models:
  - id: a/b
    name: B
    context_length: 1000
    endpoints: [{ provider: p, model: b, pricing: { prompt: "0", completion: "0" } }]
moderation:
  mode: patterns
  patterns:
    - { pattern: "\\\\bfine\\\\b", reason: ok }
    - { pattern: "^(\\\\w+\\\\s?)+$", reason: words }
`;
    let problems: string[] = [];
    try {
      loadConfig({ TOLLGATE_CONFIG: 'x.yaml' }, () => yaml);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems = error.problems;
    }
    expect(problems.join('\n')).toMatch(/moderation\.patterns\.1\.pattern: unsafe regular expression: repeats a group/);
    expect(problems.join('\n')).not.toMatch(/patterns\.0/);
  });
});
