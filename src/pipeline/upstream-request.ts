/**
 * What each attempt of an admitted request sends upstream, and what the request holds meanwhile:
 * one completion budget per endpoint of the plan (billing/completion-budget.ts), the hold being the
 * most any endpoint's budget can cost, and each attempt's body carrying its own endpoint's budget as
 * the completion limit. So whichever endpoint serves, it cannot be asked for more than was held.
 */
import { budgetCost, completionBudget } from '../billing/completion-budget.js';
import type { Units } from '../core/money.js';
import type { CatalogEndpoint } from '../routing/catalog.js';
import type { PlannedAttempt } from '../routing/plan.js';
import { upstreamBodyFor } from './upstream-parameters.js';

export interface PreparedUpstream {
  /** Held while the request is in flight: its most expensive endpoint at full budget. */
  hold: Units;
  /** The completion budget of the attempt's endpoint (tokens). */
  budgetFor(planned: PlannedAttempt): number;
  /** The body one attempt sends: allowlisted fields, the endpoint's extras, its completion budget. */
  bodyFor(planned: PlannedAttempt): Record<string, unknown>;
}

export interface BudgetedRequest extends Readonly<Record<string, unknown>> {
  max_tokens?: number | null | undefined;
  max_completion_tokens?: number | null | undefined;
}

export function prepareUpstream(
  request: BudgetedRequest,
  plan: readonly PlannedAttempt[],
  promptTokens: number,
): PreparedUpstream {
  const requested = request.max_completion_tokens ?? request.max_tokens ?? null;
  const budgets = new Map<CatalogEndpoint, number>();
  let hold = 0n;
  for (const { endpoint } of plan) {
    if (budgets.has(endpoint)) continue;
    const budget = completionBudget(requested, endpoint, promptTokens);
    budgets.set(endpoint, budget);
    const cost = budgetCost(endpoint, promptTokens, budget);
    if (cost > hold) hold = cost;
  }
  const budgetFor = (planned: PlannedAttempt) =>
    budgets.get(planned.endpoint) ?? completionBudget(requested, planned.endpoint, promptTokens);
  return { hold, budgetFor, bodyFor: (planned) => upstreamBodyFor(request, planned.endpoint, budgetFor(planned)) };
}
