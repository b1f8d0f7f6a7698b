/**
 * What each attempt of an admitted request sends upstream, and what the request holds meanwhile:
 * one completion budget per endpoint of the plan (billing/completion-budget.ts), the hold being the
 * most any endpoint's budget can cost, and each attempt's body carrying its own endpoint's budget as
 * the completion limit. So whichever endpoint serves, it cannot be asked for more than was held.
 */
import { budgetCost, completionBudget } from '../billing/completion-budget.js';
import type { Units } from '../core/money.js';
import type { TokenRange } from '../core/token-count.js';
import type { CatalogEndpoint } from '../routing/catalog.js';
import type { PlannedAttempt } from '../routing/plan.js';
import { upstreamBodyFor } from './upstream-parameters.js';
import { byokFee } from './generation.js';

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

/**
 * `prompt.upper` prices the hold; `prompt.likely` says how much of each endpoint's context is left for
 * the completion (an upper bound there would cut an answer that fits: token-estimate.ts).
 */
export function prepareUpstream(
  request: BudgetedRequest,
  plan: readonly PlannedAttempt[],
  prompt: TokenRange,
): PreparedUpstream {
  const requested = request.max_completion_tokens ?? request.max_tokens ?? null;
  const hourWrites = asksHourLongCache(request);
  const budgets = new Map<CatalogEndpoint, number>();
  let hold = 0n;
  for (const { endpoint } of plan) {
    if (budgets.has(endpoint)) continue;
    const budget = completionBudget(requested, endpoint, prompt.likely);
    budgets.set(endpoint, budget);
    const cost = budgetCost(endpoint, prompt.upper, budget, hourWrites);
    if (cost > hold) hold = cost;
  }
  const budgetFor = (planned: PlannedAttempt) =>
    budgets.get(planned.endpoint) ?? completionBudget(requested, planned.endpoint, prompt.likely);
  return { hold, budgetFor, bodyFor: (planned) => upstreamBodyFor(request, planned.endpoint, budgetFor(planned)) };
}

/**
 * Whether the request marks any prompt part, message or tool for an hour-long cache write
 * (`cache_control: { type: "ephemeral", ttl: "1h" }`, as Anthropic takes it): only then may a prompt
 * token cost the hour-long write price, so only then is the hold priced at it.
 */
export function asksHourLongCache(request: Readonly<Record<string, unknown>>): boolean {
  const hour = (value: unknown): boolean =>
    typeof value === 'object' &&
    value !== null &&
    (value as { cache_control?: { ttl?: unknown } | null }).cache_control?.ttl === '1h';
  const lists = [request.messages, request.tools];
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    for (const item of list as unknown[]) {
      if (hour(item)) return true;
      const content = (item as { content?: unknown } | null)?.content;
      if (Array.isArray(content) && (content as unknown[]).some(hour)) return true;
    }
  }
  return false;
}

/**
 * A hold covering `listCost`, as the key's limit meets it: a key that counts BYOK usage in its limit
 * (`include_byok_in_limit`) is charged the list cost *and* the fee for an answer served with the
 * caller's own provider key, so a plan that may run on one holds the fee on top (the account side,
 * which pays only the fee, is held a little more than it will be charged).
 */
export function holdWithByokFee(
  listCost: Units,
  countsByok: boolean,
  plan: readonly PlannedAttempt[],
  byokFeeBasisPoints: number,
): Units {
  if (!countsByok || !plan.some((p) => p.byok !== null)) return listCost;
  return listCost + byokFee(listCost, byokFeeBasisPoints);
}
