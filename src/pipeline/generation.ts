/**
 * Builds the charge of a served request: token counts (the upstream's, or our estimate), the cost at
 * the serving endpoint's prices, and the generation record that `GET /generation` renders.
 */
import { computeCost, type CostBreakdown, type Units } from '../core/money.js';
import type { NormalizedCompletion, NormalizedUsage } from '../providers/types.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { AttemptRecord } from '../routing/failure.js';
import type { GenerationRecord } from '../store/types.js';
import { estimateCompletionTokens } from '../billing/token-estimate.js';
import { generatedText } from '../routing/output-budget.js';

export interface AppAttribution {
  title: string | null;
  referer: string | null;
  userAgent: string | null;
}

export interface ChargeInput {
  /** Earlier segments of a continued stream (mid-stream continuation), billed with this one. */
  earlier?: readonly EarlierSegment[];
  generationId: string;
  accountId: string;
  keyHash: string;
  createdAt: number;
  served: PlannedAttempt;
  usage: NormalizedUsage | null;
  promptEstimate: number;
  /** See `EarlierSegment.promptCeiling`. */
  promptCeiling?: number | null;
  /** The completion limit this segment's upstream request carried (its share of the held budget). */
  completionLimit: number;
  completionText: string;
  streamed: boolean;
  cancelled: boolean;
  finishReason: string | null;
  nativeFinishReason: string | null;
  latencyMs: number | null;
  generationTimeMs: number | null;
  upstreamId: string | null;
  app: AppAttribution;
  externalUser: string | null;
  attempts: readonly AttemptRecord[];
  /** Moderation step duration (ms), when it ran. */
  moderationLatencyMs?: number | null;
}

export interface Charge {
  record: GenerationRecord;
  cost: CostBreakdown;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens written to the provider's prompt cache, when it reported them (the answer's usage shows them). */
  cacheWriteTokens?: number;
  /** Completion tokens the provider counted past the limit its request carried: not charged. */
  completionOverLimit: number;
  /** Prompt tokens the provider counted past the request's ceiling (`promptCharge`): not charged. */
  promptOverLimit: number;
}

/** The part of a stream served by an endpoint that died mid-answer, before another continued it. */
export interface EarlierSegment {
  served: PlannedAttempt;
  usage: NormalizedUsage | null;
  promptEstimate: number;
  /** The most prompt tokens a provider's count is charged (billing/token-estimate.ts `promptCeilingOf`); null/absent: only the context's bound. */
  promptCeiling?: number | null;
  /** The completion limit its upstream request carried: the most of its completion that is charged. */
  completionLimit: number;
  completionText: string;
}

interface SegmentCharge {
  promptTokens: number;
  completionTokens: number;
  cost: CostBreakdown;
  charged: Units;
  estimated: boolean;
  /** Served with the caller's own provider key. */
  byok: boolean;
  /** Completion tokens counted beyond the limit the upstream request carried (not charged). */
  overLimit: number;
  /** Prompt tokens counted beyond the request's ceiling or the endpoint's bound (not charged). */
  promptOverLimit: number;
}

/**
 * The completion tokens one segment is charged: the provider's count (our estimate where it gave none,
 * never zero), at most the completion limit its request carried. Every attempt is sent the budget its
 * hold was computed from (billing/completion-budget.ts), so a provider that writes past it (ignores
 * `max_tokens`, or reports a count beyond it) cannot take the caller past the hold: what lies beyond
 * the limit is the provider's overrun, reported to the operator (`overLimit`), not the caller's charge.
 * The same cap bounds a count past any the endpoint can produce (a provider's bug: 1e30).
 */
export function chargedCompletionTokens(segment: EarlierSegment): { tokens: number; overLimit: number } {
  const usage = segment.usage;
  const counted =
    usage !== null && completionCounted(segment)
      ? usage.completionTokens
      : estimateCompletionTokens(segment.completionText);
  const limit = Math.min(segment.completionLimit, tokenBound(segment.served));
  return counted > limit ? { tokens: limit, overLimit: counted - limit } : { tokens: counted, overLimit: 0 };
}

/**
 * The prompt tokens one segment is charged: the provider's count, else our estimate, within the
 * endpoint's bound and the request's ceiling (`promptCeiling`); a count past them is the provider's
 * overrun, reported to the operator (`overLimit`), not the caller's charge.
 */
export function promptCharge(segment: EarlierSegment): { tokens: number; overLimit: number } {
  const usage = segment.usage;
  const fromProvider = usage !== null && promptCounted(segment);
  const counted = fromProvider ? countedPrompt(usage) : segment.promptEstimate;
  const bound = Math.min(tokenBound(segment.served), segment.promptCeiling ?? Number.POSITIVE_INFINITY);
  if (counted <= bound) return { tokens: counted, overLimit: 0 };
  // Our own estimate past the bound is no provider's overrun to report.
  return { tokens: bound, overLimit: fromProvider ? counted - bound : 0 };
}

/** The prompt tokens one segment is charged (`promptCharge`). */
export function chargedPromptTokens(segment: EarlierSegment): number {
  return promptCharge(segment).tokens;
}

/**
 * The prompt the provider counted. The cache counts are parts of it: OpenAI's `prompt_tokens` includes
 * them; a server that counts only the rest in `prompt_tokens` says so by cache counts larger than it
 * (0 for a prompt read whole from the cache), and its prompt is the rest plus the cache — taking the
 * larger of the two charged nothing for the rest.
 */
function countedPrompt(usage: NormalizedUsage): number {
  const cache = cacheTokensOf(usage);
  return cache > usage.promptTokens ? usage.promptTokens + cache : usage.promptTokens;
}

function cacheTokensOf(usage: NormalizedUsage): number {
  return (usage.cachedTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
}

/**
 * Whether the provider's prompt count is one to charge: given, and not zero with no cache tokens
 * either — no model reads a prompt of no tokens (the chat template alone has some), so a zero is a
 * provider's bug, and would serve the answer's prompt for free.
 */
function promptCounted(segment: EarlierSegment): boolean {
  const usage = segment.usage;
  return usage !== null && usage.promptUnknown !== true && (usage.promptTokens > 0 || cacheTokensOf(usage) > 0);
}

/** Whether the provider's completion count is one to charge: given, and not zero for text it delivered. */
function completionCounted(segment: EarlierSegment): boolean {
  const usage = segment.usage;
  if (usage === null || usage.completionUnknown === true) return false;
  return usage.completionTokens > 0 || segment.completionText === '';
}

function chargeSegment(segment: EarlierSegment, basisPoints: number): SegmentCharge {
  const usage = segment.usage;
  // A prompt the provider did not count is charged at our estimate (never as zero), and a count past
  // any the endpoint can produce (a provider's bug: 1e30) at that bound — it would otherwise price
  // past what the store holds, and the served answer would go uncharged at all.
  const prompt = promptCharge(segment);
  const promptTokens = prompt.tokens;
  const completion = chargedCompletionTokens(segment);
  const completionTokens = completion.tokens;
  // The upstream's cost at list price. On BYOK the provider bills the caller directly; we charge only the fee.
  // The cache's share of the prompt is priced as the cache is, when the provider counted the prompt.
  const counted = usage !== null && promptCounted(segment);
  const cost = computeCost(segment.served.endpoint.prices, {
    promptTokens,
    completionTokens,
    cachedTokens: counted ? (usage.cachedTokens ?? 0) : 0,
    cacheWriteTokens: counted ? (usage.cacheWriteTokens ?? 0) : 0,
    cacheWrite1hTokens: counted ? (usage.cacheWrite1hTokens ?? 0) : 0,
  });
  const charged = segment.served.byok !== null ? byokFee(cost.total, basisPoints) : cost.total;
  const estimated = !promptCounted(segment) || !completionCounted(segment);
  return {
    promptTokens,
    completionTokens,
    cost,
    charged,
    estimated,
    byok: segment.served.byok !== null,
    overLimit: completion.overLimit,
    promptOverLimit: prompt.overLimit,
  };
}

/**
 * Most tokens one side of one generation is charged: four times the context window, the most any
 * real count comes near even with a catalog that understates the window.
 */
function tokenBound(served: PlannedAttempt): number {
  return 4 * Math.max(served.endpoint.contextLength, served.model.contextLength);
}

/** `byokFeeBasisPoints`: the BYOK fee in basis points of the list price (500 = 5 %), when the serving attempt used the caller's own key. */
export function buildCharge(input: ChargeInput, byokFeeBasisPoints: number): Charge {
  const final: EarlierSegment = {
    served: input.served,
    usage: input.usage,
    promptEstimate: input.promptEstimate,
    promptCeiling: input.promptCeiling ?? null,
    completionLimit: input.completionLimit,
    completionText: input.completionText,
  };
  const finalPromptCounted = promptCounted(final);
  // A continued stream is billed for every segment's real usage, each at its own endpoint's prices.
  const segments = [...(input.earlier ?? []), final].map((segment) => chargeSegment(segment, byokFeeBasisPoints));
  const sum = (pick: (s: SegmentCharge) => bigint) => segments.reduce((total, s) => total + pick(s), 0n);
  const count = (pick: (s: SegmentCharge) => number) => segments.reduce((total, s) => total + pick(s), 0);
  const cost: CostBreakdown = {
    prompt: sum((s) => s.cost.prompt),
    completion: sum((s) => s.cost.completion),
    total: sum((s) => s.cost.total),
  };
  const charged = sum((s) => s.charged);
  const promptTokens = count((s) => s.promptTokens);
  const completionTokens = count((s) => s.completionTokens);
  const estimated = segments.some((s) => s.estimated);
  // A continued stream may have run partly on the caller's own key: that part's list cost is its BYOK usage.
  const byokSegments = segments.filter((s) => s.byok);
  const isByok = byokSegments.length > 0;
  const byokListCost = byokSegments.reduce((total, s) => total + s.cost.total, 0n);
  const record: GenerationRecord = {
    id: input.generationId,
    accountId: input.accountId,
    keyHash: input.keyHash,
    createdAt: input.createdAt,
    model: input.served.model.id,
    providerName: input.served.endpoint.provider.name,
    totalCost: charged,
    upstreamPromptCost: cost.prompt,
    upstreamCompletionCost: cost.completion,
    isByok,
    streamed: input.streamed,
    cancelled: input.cancelled,
    finishReason: input.finishReason,
    nativeFinishReason: input.nativeFinishReason,
    tokensPrompt: promptTokens,
    tokensCompletion: completionTokens,
    // Parts of the counts charged: a provider's count past them (capped above) is not reported as ours.
    tokensReasoning: boundedBy(input.usage?.reasoningTokens ?? null, completionTokens),
    // The cache's counts only where they were priced: a prompt charged at our estimate had none.
    tokensCached: finalPromptCounted ? boundedBy(input.usage?.cachedTokens ?? null, promptTokens) : null,
    usageEstimated: estimated,
    latencyMs: input.latencyMs,
    generationTimeMs: input.generationTimeMs,
    upstreamId: input.upstreamId,
    appTitle: input.app.title,
    httpReferer: input.app.referer,
    userAgent: input.app.userAgent,
    externalUser: input.externalUser,
    providerResponses: input.attempts.map((a) => ({
      provider_name: a.providerName,
      status: a.status,
      latency: a.latencyMs,
    })),
  };
  if (typeof input.moderationLatencyMs === 'number') record.moderationLatencyMs = input.moderationLatencyMs;
  if (isByok && byokSegments.length < segments.length) record.byokListCost = byokListCost;
  const completionOverLimit = count((s) => s.overLimit);
  const promptOverLimit = count((s) => s.promptOverLimit);
  const charge: Charge = { record, cost, promptTokens, completionTokens, completionOverLimit, promptOverLimit };
  // Part of the prompt charged, as the cached count is (docs/api.md §2.3: both are in `prompt_tokens`):
  // an absurd count (1e9 beside a prompt capped at 400,000) is not reported as ours.
  if (finalPromptCounted && input.usage?.cacheWriteTokens !== undefined)
    charge.cacheWriteTokens = Math.max(
      0,
      Math.min(input.usage.cacheWriteTokens, promptTokens - (record.tokensCached ?? 0)),
    );
  return charge;
}

/** Half-up rounding of list cost × basis points / 10 000, in integer units. */
export function byokFee(listCost: Units, basisPoints: number): Units {
  return (listCost * BigInt(basisPoints) + 5_000n) / 10_000n;
}

export function generatedTextOf(completion: NormalizedCompletion): string {
  return completion.choices.map((choice) => generatedText(choice.message)).join('');
}

function boundedBy(count: number | null, total: number): number | null {
  return count === null ? null : Math.min(count, total);
}
