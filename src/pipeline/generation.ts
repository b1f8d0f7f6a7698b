/**
 * Builds the charge of a served request: token counts (the upstream's, or our estimate), the cost at
 * the serving endpoint's prices, and the generation record that `GET /generation` renders.
 */
import { computeCost, type CostBreakdown } from '../core/money.js';
import type { NormalizedUsage } from '../providers/types.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { AttemptRecord } from '../routing/failure.js';
import type { GenerationRecord } from '../store/types.js';
import { estimateCompletionTokens } from '../billing/token-estimate.js';

export interface AppAttribution {
  title: string | null;
  referer: string | null;
  userAgent: string | null;
}

export interface ChargeInput {
  generationId: string;
  accountId: string;
  keyHash: string;
  createdAt: number;
  served: PlannedAttempt;
  usage: NormalizedUsage | null;
  promptEstimate: number;
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
}

export interface Charge {
  record: GenerationRecord;
  cost: CostBreakdown;
  promptTokens: number;
  completionTokens: number;
}

export function buildCharge(input: ChargeInput): Charge {
  const estimated = input.usage === null;
  const promptTokens = input.usage?.promptTokens ?? input.promptEstimate;
  const completionTokens = input.usage?.completionTokens ?? estimateCompletionTokens(input.completionText);
  const cost = computeCost(input.served.endpoint.prices, { promptTokens, completionTokens });
  const record: GenerationRecord = {
    id: input.generationId,
    accountId: input.accountId,
    keyHash: input.keyHash,
    createdAt: input.createdAt,
    model: input.served.model.id,
    providerName: input.served.endpoint.provider.name,
    totalCost: cost.total,
    upstreamPromptCost: cost.prompt,
    upstreamCompletionCost: cost.completion,
    isByok: false,
    streamed: input.streamed,
    cancelled: input.cancelled,
    finishReason: input.finishReason,
    nativeFinishReason: input.nativeFinishReason,
    tokensPrompt: promptTokens,
    tokensCompletion: completionTokens,
    tokensReasoning: input.usage?.reasoningTokens ?? null,
    tokensCached: input.usage?.cachedTokens ?? null,
    usageEstimated: estimated,
    latencyMs: input.latencyMs,
    generationTimeMs: input.generationTimeMs,
    upstreamId: input.upstreamId,
    appTitle: input.app.title,
    httpReferer: input.app.referer,
    userAgent: input.app.userAgent,
    externalUser: input.externalUser,
    providerResponses: input.attempts.map((a) => ({ provider_name: a.providerName, status: a.status, latency: a.latencyMs })),
  };
  return { record, cost, promptTokens, completionTokens };
}
