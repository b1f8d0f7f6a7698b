import { describe, expect, it } from 'vitest';
import { budgetCost, completionBudget, DEFAULT_COMPLETION_BUDGET } from './completion-budget.js';

describe('completionBudget', () => {
  const wide = { contextLength: 128_000, maxCompletionTokens: null };
  it('is the caller limit, else the endpoint maximum, else 4096, within the context left', () => {
    expect(completionBudget(null, wide, 100)).toBe(DEFAULT_COMPLETION_BUDGET);
    expect(completionBudget(50, wide, 100)).toBe(50);
    expect(completionBudget(null, { contextLength: 128_000, maxCompletionTokens: 16_384 }, 100)).toBe(16_384);
    expect(completionBudget(20_000, { contextLength: 128_000, maxCompletionTokens: 16_384 }, 100)).toBe(16_384);
    expect(completionBudget(null, { contextLength: 1000, maxCompletionTokens: null }, 900)).toBe(100);
  });

  it('is at least 1 when the prompt fills the context (0 reads as "no limit" on some servers)', () => {
    expect(completionBudget(null, { contextLength: 1000, maxCompletionTokens: null }, 5000)).toBe(1);
  });

  it('costs the prompt and the whole budget, rounded up to units', () => {
    const prices = { prompt: 1_000_000_000n, completion: 2_000_000_000n, request: 1n }; // 1000 and 2000 units per token
    expect(budgetCost({ prices }, 10, 5)).toBe(10n * 1000n + 5n * 2000n + 1n);
  });

  it('holds every prompt token at a cache write when writes cost more than the prompt, never at a cheaper read', () => {
    const prices = { prompt: 1_000_000_000n, completion: 2_000_000_000n, request: 0n };
    expect(budgetCost({ prices: { ...prices, cacheWrite: 1_250_000_000n } }, 10, 5)).toBe(10n * 1250n + 5n * 2000n);
    expect(budgetCost({ prices: { ...prices, cacheRead: 100_000_000n, cacheWrite: 500_000_000n } }, 10, 5)).toBe(
      10n * 1000n + 5n * 2000n,
    );
  });
});
