/**
 * Mid-stream continuation (routing.mid_stream_continuation): when a committed stream's provider dies
 * after content was sent, the same request plus the answer so far (as a trailing assistant message,
 * the prefill) goes to the plan's other endpoints that declare prefill support, and the relay
 * (stream-relay.ts) goes on writing from the new segment. The hold grows first by what the
 * continuation could cost beyond it; the continuation's chunks lose the role delta and the whitespace
 * the caller already has.
 */
import { budgetCost } from '../billing/completion-budget.js';
import type { Hold } from '../billing/credit-gate.js';
import { estimateCompletionTokens } from '../billing/token-estimate.js';
import type { Units } from '../core/money.js';
import type { ChunkChoice } from '../providers/types.js';
import { executeStream } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { AttemptRecord } from '../routing/failure.js';
import type { ChunkEvent, UpstreamStream } from '../routing/stream-reader.js';
import type { Admitted, ChatContext, ChatDeps } from './chat-types.js';
import { chargedCompletionTokens, chargedPromptTokens, type EarlierSegment } from './generation.js';
import { withCompletionLimit } from './upstream-parameters.js';
import { asksHourLongCache, holdWithByokFee } from './upstream-request.js';

/** One upstream stream feeding the caller's stream. */
export interface Segment {
  served: PlannedAttempt;
  held: ChunkEvent[];
  /** Read, classified and reported to the endpoint's health by routing/stream-reader.ts. */
  stream: UpstreamStream;
  attemptStartedAt: number;
  firstContentAt: number;
  promptEstimate: number;
  /** See `EarlierSegment.promptCeiling`. */
  promptCeiling: number | null;
  /** The completion limit its upstream request carried (a continuation: what was left of the budget). */
  completionLimit: number;
  /** A continuation must not repeat the role delta the caller already has. */
  continuing: boolean;
  /**
   * The answer so far ended in whitespace, which the continuation's prefill was sent without
   * (Anthropic refuses a final assistant text that ends in whitespace): whitespace the continuation
   * starts with is the caller's already, and is dropped until its first other character.
   */
  dropLeadingSpace: boolean;
}

/**
 * Whether a broken answer to this request may be continued at all: not a JSON-constrained one
 * (`response_format` `json_object` or `json_schema`). A constrained decoder starts its JSON value
 * after the prefill, so the caller would hold the partial value and a whole new one — invalid JSON,
 * ended as a success; Anthropic's structured outputs take no prefill either.
 */
export function continuableRequest(request: { response_format?: { type: string } | undefined }): boolean {
  const type = request.response_format?.type;
  return type !== 'json_object' && type !== 'json_schema';
}

/** What the segments so far cost at list price: the provider's counts, our estimates where it gave none. */
export function costSoFar(segments: readonly EarlierSegment[]): Units {
  let total = 0n;
  for (const s of segments) {
    total += budgetCost(s.served.endpoint, chargedPromptTokens(s), chargedCompletionTokens(s).tokens);
  }
  return total;
}

/** A continuation's chunk choices as the caller gets them: no second role delta, no whitespace it has already. */
export function continuationChoices(segment: Segment, choices: readonly ChunkChoice[]): ChunkChoice[] {
  return choices.map((choice) => withoutLeadingSpace(segment, withoutRole(choice)));
}

function withoutLeadingSpace(segment: Segment, choice: ChunkChoice): ChunkChoice {
  const content = choice.delta.content;
  if (!segment.dropLeadingSpace || typeof content !== 'string') return choice;
  const rest = content.trimStart();
  if (rest !== '') segment.dropLeadingSpace = false;
  return rest === content ? choice : { ...choice, delta: { ...choice.delta, content: rest } };
}

function withoutRole(choice: ChunkChoice): ChunkChoice {
  if (!('role' in choice.delta)) return choice;
  const { role: _role, ...delta } = choice.delta;
  return { ...choice, delta };
}

/** A continuation opened (`segment`), or not: the attempts made either way. */
export type Continuation =
  | { segment: Segment; attempts: AttemptRecord[]; extraHold: Hold | null }
  | { segment: null; attempts: AttemptRecord[]; extraHold: null };

const NONE: Continuation = { segment: null, attempts: [], extraHold: null };

/**
 * Opens a continuation: the same request plus the answer so far as a trailing assistant message
 * (prefill), on the plan's other endpoints that declare prefill support, through the ordinary
 * execute loop (so timeouts, retries and breakers apply).
 */
export async function continueElsewhere(
  deps: ChatDeps,
  ctx: ChatContext,
  admitted: Admitted,
  used: readonly (Segment | PlannedAttempt)[],
  answerSoFar: string,
  spent: Units,
): Promise<Continuation> {
  const usedKeys = new Set(used.map((u) => ('served' in u ? u.served.healthKey : u.healthKey)));
  const plan = admitted.plan.filter((p) => p.endpoint.supportsPrefill && !usedKeys.has(p.healthKey));
  if (plan.length === 0 || ctx.signal.aborted) return NONE;
  const prefill = answerSoFar.trimEnd();
  const messages = [...admitted.request.messages, { role: 'assistant', content: prefill }];
  const written = estimateCompletionTokens(answerSoFar);
  // The continuation may write only what is left of the budget the hold was computed from.
  const limitFor = (p: PlannedAttempt) => Math.max(1, admitted.budgetFor(p) - written);
  // The continuation reads the prompt again, and the answer so far: what was held covered one prompt.
  // Before it is sent, the hold grows by what the worst continuation could cost beyond it — a second
  // admission, refused (no continuation: the in-band error) when the account or key cannot cover it.
  const promptTokens = admitted.promptEstimate + written;
  const hourWrites = asksHourLongCache(admitted.request);
  let worst = 0n;
  for (const p of plan) {
    const cost = budgetCost(p.endpoint, promptTokens, limitFor(p), hourWrites);
    if (cost > worst) worst = cost;
  }
  const excess =
    holdWithByokFee(spent + worst, ctx.key.includeByokInLimit, admitted.plan, deps.byokFeeBasisPoints) -
    admitted.hold.amount;
  let extraHold: Hold | null = null;
  if (excess > 0n && admitted.plan.some((p) => !p.model.isFree)) {
    try {
      extraHold = await deps.gate.admit(ctx.key, true, excess);
    } catch {
      return NONE;
    }
  }
  const bodyFor = (p: PlannedAttempt) =>
    withCompletionLimit({ ...admitted.bodyFor(p), messages }, p.endpoint, limitFor(p));
  let outcome: Awaited<ReturnType<typeof executeStream>>;
  try {
    outcome = await executeStream(deps.execute, {
      plan,
      body: { ...admitted.upstreamBody, messages },
      bodyFor,
      signal: ctx.signal,
      capacity: admitted.capacity ?? undefined,
    });
  } catch (error) {
    if (extraHold) deps.gate.release(extraHold);
    throw error;
  }
  if (!outcome.ok) {
    if (extraHold) deps.gate.release(extraHold);
    // Its attempts failed, and are listed with the generation's (`provider_responses`) all the same.
    return { segment: null, attempts: outcome.attempts, extraHold: null };
  }
  return {
    extraHold,
    attempts: outcome.attempts,
    segment: {
      served: outcome.served,
      held: outcome.held,
      stream: outcome.stream,
      attemptStartedAt: outcome.attemptStartedAt,
      firstContentAt: outcome.firstContentAt,
      promptEstimate: admitted.promptEstimate + estimateCompletionTokens(answerSoFar),
      // The answer so far is read as prompt too: up to a token per byte of it.
      promptCeiling: admitted.promptCeiling === null ? null : admitted.promptCeiling + Buffer.byteLength(answerSoFar),
      completionLimit: limitFor(outcome.served),
      continuing: true,
      dropLeadingSpace: prefill.length < answerSoFar.length,
    },
  };
}
