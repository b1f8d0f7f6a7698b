/**
 * The completion budget: how many tokens one endpoint may write for one request. The credit hold is
 * computed from it, and the same number is sent upstream as the request's completion limit, so the
 * hold bounds what the provider can produce (README "The overspend bound").
 */
import { worstPromptPrice, type TokenPrices, type Units } from '../core/money.js';

/** Without a caller limit or an endpoint maximum, a completion is held, and limited upstream, at this many tokens. */
export const DEFAULT_COMPLETION_BUDGET = 4096;

export interface BudgetedEndpoint {
  contextLength: number;
  maxCompletionTokens: number | null;
  prices: TokenPrices;
}

/**
 * min(the caller's limit, else the endpoint's `max_completion_tokens`, else 4096; the context left
 * after the prompt), and at least 1: a prompt that fills the context is the provider's to refuse, and
 * a limit of 0 reads as "no limit" on some servers.
 */
export function completionBudget(
  requested: number | null,
  endpoint: Pick<BudgetedEndpoint, 'contextLength' | 'maxCompletionTokens'>,
  promptTokens: number,
): number {
  const available = endpoint.contextLength - promptTokens;
  const cap = endpoint.maxCompletionTokens === null ? available : Math.min(endpoint.maxCompletionTokens, available);
  const wanted = requested ?? endpoint.maxCompletionTokens ?? DEFAULT_COMPLETION_BUDGET;
  return Math.max(1, Math.min(wanted, cap));
}

/**
 * The most a request costs on an endpoint: its prompt estimate (every token at the dearer of the prompt
 * and cache-write prices) and its full completion budget, rounded up to units.
 */
export function budgetCost(
  endpoint: Pick<BudgetedEndpoint, 'prices'>,
  promptTokens: number,
  completionTokens: number,
  /** The request marks a prompt part for an hour-long cache write (`cache_control.ttl: "1h"`). */
  hourWrites = false,
): Units {
  const femto =
    worstPromptPrice(endpoint.prices, hourWrites) * BigInt(promptTokens) +
    endpoint.prices.completion * BigInt(completionTokens) +
    endpoint.prices.request;
  return (femto + 999_999n) / 1_000_000n;
}
