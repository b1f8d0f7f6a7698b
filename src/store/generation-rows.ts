import { z } from 'zod';
import type { GenerationRecord } from './types.js';
import { asBigInt, asBoolean, asNullableString, asNumber, asString } from './row-values.js';
import type { SqlParam, SqlRow } from './sql-driver.js';

/** Columns that are queried or aggregated; every other field lives in the `details` JSON. */
export const GENERATION_COLUMNS =
  'id, account_id, key_hash, created_at, model, provider_name, total_cost, is_byok, streamed, finish_reason, ' +
  'tokens_prompt, tokens_completion, details';
export const GENERATION_COLUMN_COUNT = 13;

const units = z
  .string()
  .regex(/^-?\d+$/)
  .transform((text) => BigInt(text));
const nullableInt = z.number().int().nullable();

const detailsSchema = z.object({
  upstreamPromptCost: units,
  upstreamCompletionCost: units,
  cancelled: z.boolean(),
  nativeFinishReason: z.string().nullable(),
  tokensReasoning: nullableInt,
  tokensCached: nullableInt,
  usageEstimated: z.boolean(),
  latencyMs: z.number().nullable(),
  generationTimeMs: z.number().nullable(),
  upstreamId: z.string().nullable(),
  appTitle: z.string().nullable(),
  httpReferer: z.string().nullable(),
  userAgent: z.string().nullable(),
  externalUser: z.string().nullable(),
  providerResponses: z.array(
    z.object({ provider_name: z.string(), status: z.number().int().nullable(), latency: z.number() }),
  ),
  /** Written only when moderation ran; rows from before it (and unmoderated ones) lack it. */
  moderationLatencyMs: z.number().nullable().optional(),
  /** Written only for a generation served partly with the caller's own key (GenerationRecord.byokListCost). */
  byokListCost: units.optional(),
});

type Details = z.input<typeof detailsSchema>;

function detailsJson(generation: GenerationRecord): string {
  const details: Details = {
    upstreamPromptCost: generation.upstreamPromptCost.toString(),
    upstreamCompletionCost: generation.upstreamCompletionCost.toString(),
    cancelled: generation.cancelled,
    nativeFinishReason: generation.nativeFinishReason,
    tokensReasoning: generation.tokensReasoning,
    tokensCached: generation.tokensCached,
    usageEstimated: generation.usageEstimated,
    latencyMs: generation.latencyMs,
    generationTimeMs: generation.generationTimeMs,
    upstreamId: generation.upstreamId,
    appTitle: generation.appTitle,
    httpReferer: generation.httpReferer,
    userAgent: generation.userAgent,
    externalUser: generation.externalUser,
    providerResponses: generation.providerResponses.map((attempt) => ({
      provider_name: attempt.provider_name,
      status: attempt.status,
      latency: attempt.latency,
    })),
  };
  if (typeof generation.moderationLatencyMs === 'number') details.moderationLatencyMs = generation.moderationLatencyMs;
  if (generation.byokListCost !== undefined) details.byokListCost = generation.byokListCost.toString();
  return JSON.stringify(details);
}

/** Values in GENERATION_COLUMNS order. */
export function generationToParams(generation: GenerationRecord): SqlParam[] {
  return [
    generation.id,
    generation.accountId,
    generation.keyHash,
    generation.createdAt,
    generation.model,
    generation.providerName,
    generation.totalCost,
    generation.isByok,
    generation.streamed,
    generation.finishReason,
    generation.tokensPrompt,
    generation.tokensCompletion,
    detailsJson(generation),
  ];
}

export function generationFromRow(row: SqlRow): GenerationRecord {
  const details = detailsSchema.parse(JSON.parse(asString(row.details)));
  return {
    id: asString(row.id),
    accountId: asString(row.account_id),
    keyHash: asString(row.key_hash),
    createdAt: asNumber(row.created_at),
    model: asString(row.model),
    providerName: asNullableString(row.provider_name),
    totalCost: asBigInt(row.total_cost),
    upstreamPromptCost: details.upstreamPromptCost,
    upstreamCompletionCost: details.upstreamCompletionCost,
    isByok: asBoolean(row.is_byok),
    streamed: asBoolean(row.streamed),
    cancelled: details.cancelled,
    finishReason: asNullableString(row.finish_reason),
    nativeFinishReason: details.nativeFinishReason,
    tokensPrompt: asNumber(row.tokens_prompt),
    tokensCompletion: asNumber(row.tokens_completion),
    tokensReasoning: details.tokensReasoning,
    tokensCached: details.tokensCached,
    usageEstimated: details.usageEstimated,
    latencyMs: details.latencyMs,
    generationTimeMs: details.generationTimeMs,
    upstreamId: details.upstreamId,
    appTitle: details.appTitle,
    httpReferer: details.httpReferer,
    userAgent: details.userAgent,
    externalUser: details.externalUser,
    providerResponses: details.providerResponses,
    ...(typeof details.moderationLatencyMs === 'number' ? { moderationLatencyMs: details.moderationLatencyMs } : {}),
    ...(details.byokListCost !== undefined ? { byokListCost: details.byokListCost } : {}),
  };
}
