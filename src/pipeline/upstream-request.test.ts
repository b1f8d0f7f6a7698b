import { describe, expect, it } from 'vitest';
import { budgetCost, completionBudget } from '../billing/completion-budget.js';
import { estimatePromptTokenRange } from '../billing/token-estimate.js';
import type { PlannedAttempt } from '../routing/plan.js';
import { asksHourLongCache, prepareUpstream } from './upstream-request.js';

const prices = {
  prompt: 1_000_000n,
  completion: 2_000_000n,
  request: 0n,
  cacheWrite: 1_250_000n,
  cacheWrite1h: 2_000_000n,
};
const endpoint = { contextLength: 100_000, maxCompletionTokens: null, prices };
const plan = [{ endpoint } as unknown as PlannedAttempt];

describe('prepareUpstream', () => {
  it('holds the upper prompt estimate with the budget the likely one leaves', () => {
    const prompt = { upper: 110_000, likely: 70_000 };
    const prepared = prepareUpstream({ messages: [] }, plan, prompt);
    const budget = completionBudget(null, endpoint, prompt.likely);
    expect(prepared.budgetFor(plan[0]!)).toBe(budget);
    expect(budget).toBe(4096);
    expect(prepared.hold).toBe(budgetCost(endpoint, prompt.upper, budget));
  });

  it('prices the prompt at the hour-long write price only for a request that marks one', () => {
    const prompt = { upper: 1000, likely: 1000 };
    const plain = {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }] }],
    };
    const hour = {
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
      ],
    };
    expect(asksHourLongCache(plain)).toBe(false);
    expect(asksHourLongCache(hour)).toBe(true);
    expect(asksHourLongCache({ messages: [], tools: [{ type: 'function', cache_control: { ttl: '1h' } }] })).toBe(true);
    expect(asksHourLongCache({ messages: [{ role: 'system', content: 'x', cache_control: { ttl: '1h' } }] })).toBe(
      true,
    );
    const budget = completionBudget(null, endpoint, 1000);
    // Five-minute writes (1.25×) always; hour-long ones (2×) only when asked for.
    expect(prepareUpstream(plain, plan, prompt).hold).toBe(
      (1000n * 1_250_000n + BigInt(budget) * 2_000_000n + 999_999n) / 1_000_000n,
    );
    expect(prepareUpstream(hour, plan, prompt).hold).toBe(
      (1000n * 2_000_000n + BigInt(budget) * 2_000_000n + 999_999n) / 1_000_000n,
    );
  });

  it('counts media at half their fixed counts in the likely size: images do not take the whole room', () => {
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    const range = estimatePromptTokenRange([{ role: 'user', content: [{ type: 'text', text: 'hi' }, image, image] }]);
    expect(range.upper - range.likely).toBe(2 * 1024);
    expect(range.likely).toBeGreaterThanOrEqual(2 * 1024);
  });
});
