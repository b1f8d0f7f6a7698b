import { describe, expect, it } from 'vitest';
import { completionLimitOf, generatedText, OutputBudget } from './output-budget.js';

const event = (content: string) => ({
  choices: [{ index: 0, delta: { content }, finish_reason: null, native_finish_reason: null }],
});

describe('OutputBudget', () => {
  it('counts nothing while the output cannot be past the cut point (a third of it in code units)', () => {
    const calls: string[] = [];
    const budget = new OutputBudget(100, (text) => (calls.push(text), text.length));
    expect(budget.cutAt).toBe(264);
    for (let i = 0; i < 88; i++) expect(budget.add(event('a'))).toBe(false); // 88 × 3 = 264: not past it
    expect(calls).toEqual([]);
    budget.add(event('b'));
    expect(calls).toEqual(['b']);
  });

  it('is past the cut point once the counted tokens pass it, the text before counting at four characters a token', () => {
    const budget = new OutputBudget(10, () => 1); // cut at 84; counting from the 29th character
    let adds = 0;
    while (!budget.add(event('abcd'))) adds++;
    // 7 events (28 characters) uncounted → 7 tokens; then one token per event until 85.
    expect(adds).toBe(7 + 77);
  });

  it('leaves reasoning out of the count (a limit may cover only the answer)', () => {
    const budget = new OutputBudget(1, (text) => text.length); // cut at 66
    const thinking = {
      choices: [{ index: 0, delta: { reasoning: 'x'.repeat(1000) }, finish_reason: null, native_finish_reason: null }],
    };
    for (let i = 0; i < 10; i++) expect(budget.add(thinking)).toBe(false);
    expect(budget.add(event('y'.repeat(100)))).toBe(true);
  });

  it('bounds everything generated, reasoning included, at 16 characters a token of the context window (at least 1 Mi)', () => {
    const thinking = (n: number) => ({
      choices: [{ index: 0, delta: { reasoning: 'x'.repeat(n) }, finish_reason: null, native_finish_reason: null }],
    });
    const window = new OutputBudget(50, () => 1, 128_000); // 2,048,000 characters
    expect(window.maxGeneratedChars).toBe(2_048_000);
    for (let i = 0; i < 2_048; i++) expect(window.add(thinking(1_000))).toBe(false);
    expect(window.add(thinking(1))).toBe(true);
    // Reasoning sent as `reasoning_details` (an OpenRouter upstream's form) counts the same.
    const details = new OutputBudget(50, () => 1, 1_000);
    const detailed = (n: number) => ({
      choices: [
        {
          index: 0,
          delta: { reasoning_details: [{ type: 'reasoning.text', text: 'x'.repeat(n) }] },
          finish_reason: null,
          native_finish_reason: null,
        },
      ],
    });
    // Each item's JSON is ~50 characters more than its text: 1,000 items of 1,000 fit, the next ones not.
    for (let i = 0; i < 1_000; i++) expect(details.add(detailed(1_000))).toBe(false);
    let more = 0;
    while (more < 100 && !details.add(detailed(1_000))) more++;
    expect(more).toBeLessThan(50);
    // A signature, a field no one named, a tool call's id: counted the same (outside check).
    for (const delta of [
      { reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'x'.repeat(64 * 1024) }] },
      { reasoning_details: [{ type: 'reasoning.other', blob: 'x'.repeat(64 * 1024) }] },
      { tool_calls: [{ index: 0, id: 'x'.repeat(64 * 1024), type: 'function', function: { name: 'f' } }] },
    ]) {
      const budget = new OutputBudget(50, () => 1, 1_000);
      const event = { choices: [{ index: 0, delta, finish_reason: null, native_finish_reason: null }] };
      let events = 0;
      while (events < 100 && !budget.add(event)) events++;
      expect(events).toBe(15); // 64 KiB and a little JSON each: the 16th passes 1 Mi
    }
    // No completion limit, no known window: the answer is not counted in tokens, the floor still holds.
    const unlimited = new OutputBudget(null, () => 1);
    expect(unlimited.cutAt).toBe(Infinity);
    expect(unlimited.add(event('y'.repeat(1024 * 1024)))).toBe(false);
    expect(unlimited.add(thinking(1))).toBe(true);
  });

  it('counts reasoning, refusals and tool calls as output', () => {
    expect(
      generatedText({
        content: 'a',
        reasoning: 'b',
        refusal: 'c',
        tool_calls: [{ function: { name: 'd', arguments: 'e' } }, { function: { arguments: 'f' } }],
      }),
    ).toBe('abcdef');
  });
});

describe('completionLimitOf', () => {
  it('reads the larger completion limit a body carries, or none', () => {
    expect(completionLimitOf({ max_tokens: 20 })).toBe(20);
    expect(completionLimitOf({ max_tokens: 20, max_completion_tokens: 30 })).toBe(30);
    expect(completionLimitOf({ max_completion_tokens: 5 })).toBe(5);
    expect(completionLimitOf({ max_tokens: '20' })).toBeNull();
    expect(completionLimitOf({})).toBeNull();
  });
});
