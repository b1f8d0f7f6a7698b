/**
 * The settle step of the chat pipeline (chat-completion.ts), shared by the JSON and the streamed
 * paths: the charge is committed (generation + ledger + counters in one transaction) before the caller
 * hears "done", then the hold becomes the charge.
 */
import type { Hold } from '../billing/credit-gate.js';
import { usagePeriods } from '../core/usage-window.js';
import { unitsToUsd } from '../core/money.js';
import type { RequestCapacity } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { ChatContext } from './chat-context.js';
import type { ChatDeps } from './chat-types.js';
import type { ResponseIdentity } from './completion-shapes.js';
import { buildCharge, type Charge, type ChargeInput } from './generation.js';

export function identityOf(ctx: ChatContext, served: PlannedAttempt, now: number): ResponseIdentity {
  return {
    id: ctx.generationId,
    created: Math.floor(now / 1000),
    model: served.model.id,
    provider: served.endpoint.provider.name,
  };
}

/** Commits the charge (generation + ledger + counters in one transaction) before the caller hears "done". */
export async function settle(
  deps: ChatDeps,
  input: ChargeInput,
  hold?: Hold,
  capacity?: RequestCapacity | null,
  /** More held for the same request (a continuation's excess): released once `hold` is settled, with it. */
  extraHolds: readonly Hold[] = [],
): Promise<Charge> {
  const charge = buildCharge(input, deps.byokFeeBasisPoints);
  capacity?.settle(charge.promptTokens + charge.completionTokens);
  const waitStarted = performance.now();
  const committed = await deps.settler.settle({ generation: charge.record, periods: usagePeriods(input.createdAt) });
  deps.metrics.settleWait.observe((performance.now() - waitStarted) / 1000);
  // Committed first, then the hold becomes the charge: an admission sees the hold, the charge, or both — never neither.
  // A charge durable only in the journal keeps its hold until the store has it. The id is this
  // request's own, so a store that already had it (`applied: false`) has it from an earlier attempt
  // of ours whose answer was lost: the hold becomes the charge all the same.
  const releaseExtras = () => {
    for (const extra of extraHolds) deps.gate.release(extra);
  };
  if (hold && committed.deferred) {
    deps.gate.settleLater(
      hold,
      committed.deferred.then((outcome) => (outcome.recorded ? charge.record : null)),
    );
    // The charge may exceed `hold` by what the extras hold: they cover it until the store has it too.
    committed.deferred.then(releaseExtras, releaseExtras);
  } else {
    if (hold) await deps.gate.settle(hold, charge.record);
    releaseExtras();
  }
  const model = charge.record.model;
  const provider = charge.record.providerName ?? 'unknown';
  deps.metrics.tokens.inc({ model, provider, kind: 'prompt' }, charge.promptTokens);
  deps.metrics.tokens.inc({ model, provider, kind: 'completion' }, charge.completionTokens);
  deps.metrics.creditsCharged.inc({ model, provider }, unitsToUsd(charge.record.totalCost));
  if (charge.completionOverLimit > 0) {
    // The caller is charged up to the limit it was held for; the provider's overrun is the operator's to take up.
    deps.metrics.completionOverLimit.inc({ provider }, charge.completionOverLimit);
    deps.log.warn(
      // With BYOK the provider bills the caller's own key for it; Tollgate only charges less fee.
      {
        generation_id: charge.record.id,
        provider,
        byok: charge.record.isByok,
        over_limit_tokens: charge.completionOverLimit,
      },
      'the provider counted more completion tokens than the limit it was sent; charged up to the limit',
    );
  }
  if (charge.promptOverLimit > 0)
    deps.log.warn(
      {
        generation_id: charge.record.id,
        provider,
        byok: charge.record.isByok,
        over_limit_tokens: charge.promptOverLimit,
      },
      'the provider counted more prompt tokens than the request can hold; charged up to its ceiling',
    );
  return charge;
}
