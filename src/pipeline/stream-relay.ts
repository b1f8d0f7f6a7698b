/**
 * Relays a committed upstream stream to the caller: chunks forwarded as they arrive (re-labelled
 * with our id, model and provider), the charge committed, then one usage chunk and `[DONE]`.
 * An upstream that dies after content was sent ends in one in-band error chunk, never in a
 * truncated success — unless mid-stream continuation is on and another endpoint that supports
 * prefill continues the same answer (the caller sees one uninterrupted stream; every segment is
 * billed for its real usage). A caller that leaves is charged for what was produced.
 */
import { TollgateError } from '../core/errors.js';
import type { ChunkChoice, FailureType, NormalizedUsage } from '../providers/types.js';
import type { StreamOutcome } from '../routing/execute.js';
import { inBandError, isServerSide, serverSideMessage } from '../routing/failure.js';
import { STOP, type ChunkEvent, type StreamEnd } from '../routing/stream-reader.js';
import { abortReasonOf } from '../routing/upstream-client.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { AttemptRecord } from '../routing/failure.js';
import type { Admitted, ChatContext, ChatDeps } from './chat-types.js';
import { identityOf, settle } from './settle.js';
import { chunkHead, chunkJson, renderUsageChunk, type ResponseIdentity } from './completion-shapes.js';
import { generatedText } from '../routing/output-budget.js';
import type { Charge, ChargeInput, EarlierSegment } from './generation.js';
import { startCheckpoints } from './stream-checkpoints.js';
import {
  continuableRequest,
  continuationChoices,
  continueElsewhere,
  costSoFar,
  type Segment,
} from './stream-continuation.js';
import type { Hold } from '../billing/credit-gate.js';

export interface StreamSink {
  /** True once response headers went out (after that, errors are in-band). */
  readonly started: boolean;
  /** True when the caller has gone away. */
  readonly closed: boolean;
  /** Sends `: TOLLGATE PROCESSING` whenever nothing else was written for `intervalMs`. Returns a stop function. */
  keepAlive(intervalMs: number): () => void;
  /** Writes one `data:` event, waiting for the socket to drain when the caller reads slowly. */
  write(payload: unknown): Promise<void>;
  /**
   * The same, for a payload that is JSON text already (one line); null when nothing needs waiting
   * for (the common case: no await, no microtask hop per token), else the wait for the socket.
   */
  writeJson(json: string): Promise<void> | null;
  /** One in-band error chunk (with the usage of what was charged, when there is a charge), `[DONE]`, end. */
  error(error: TollgateError, identity: ResponseIdentity, charge?: Charge | null): Promise<void>;
  /** `data: [DONE]`, end. */
  done(): Promise<void>;
}

type Served = { ok: true; served: PlannedAttempt; attempts: AttemptRecord[] } & StreamOutcome;

interface SegmentResult {
  usage: NormalizedUsage | null;
  /** The answer's text (what a continuation continues). */
  content: string;
  /** Everything the upstream generated — text, reasoning, tool-call arguments — for a token estimate when it reports no usage. */
  generated: string;
  upstreamId: string | null;
  /** Set when the upstream (not the caller, not shutdown) broke the stream: it counts against the endpoint's health. */
  fault: FailureType | null;
  failure: TollgateError | null;
  cancelled: boolean;
}

/** What the caller has received so far, across segments. */
interface Progress {
  content: string;
  /**
   * What the caller has is one choice's text (and reasoning) alone, which a continuation's prefill can
   * carry on: tool calls (the continuation would number its own from 0 again, onto the caller's), a
   * refusal or a second choice cannot be continued, so a break after them ends in the in-band error;
   * neither can a JSON-constrained answer (`continuableRequest`).
   */
  continuable: boolean;
  finishReason: string | null;
  nativeFinishReason: string | null;
  fingerprint: string | null;
}

/** A checkpoint is charged only if the process dies: the generation then records a cut answer. */
const CUT_BY_PROCESS_DEATH = new TollgateError('internal', 'The gateway process stopped mid-stream');

export async function relayStream(
  deps: ChatDeps,
  ctx: ChatContext,
  admitted: Admitted,
  outcome: Served,
  sink: StreamSink,
): Promise<void> {
  /** Who the chunks name: the endpoint serving now (after a continuation, the one that continued). */
  let identity = identityOf(ctx, outcome.served, outcome.startedAt);
  const firstIdentity = identity;
  const progress: Progress = {
    content: '',
    continuable: continuableRequest(admitted.request),
    finishReason: null,
    nativeFinishReason: null,
    fingerprint: null,
  };
  const attempts = [...outcome.attempts];
  const earlier: EarlierSegment[] = [];
  let segment: Segment = {
    served: outcome.served,
    held: outcome.held,
    stream: outcome.stream,
    attemptStartedAt: outcome.attemptStartedAt,
    firstContentAt: outcome.firstContentAt,
    promptEstimate: admitted.promptEstimate,
    promptCeiling: admitted.promptCeiling,
    completionLimit: admitted.budgetFor(outcome.served),
    continuing: false,
    dropLeadingSpace: false,
  };
  const chargeInput = (
    result: SegmentResult,
    failure: TollgateError | null,
    cancelled: boolean,
    finishedAt: number,
  ): ChargeInput => ({
    generationId: ctx.generationId,
    accountId: ctx.key.accountId,
    keyHash: ctx.key.hash,
    createdAt: outcome.startedAt,
    served: segment.served,
    usage: result.usage,
    promptEstimate: segment.promptEstimate,
    promptCeiling: segment.promptCeiling,
    completionLimit: segment.completionLimit,
    completionText: result.generated,
    earlier: [...earlier],
    streamed: true,
    cancelled,
    finishReason: failure ? 'error' : cancelled ? null : progress.finishReason,
    nativeFinishReason: failure ? null : progress.nativeFinishReason,
    latencyMs: outcome.firstContentAt - outcome.startedAt,
    generationTimeMs: finishedAt - outcome.startedAt,
    upstreamId: result.upstreamId,
    app: ctx.app,
    externalUser: admitted.request.user ?? null,
    attempts,
    moderationLatencyMs: admitted.moderationLatencyMs,
  });
  // What was delivered so far, journaled now and then: charged if this process dies before the end.
  const checkpoints = startCheckpoints(
    deps,
    (live: SegmentResult) => chargeInput(live, CUT_BY_PROCESS_DEATH, false, deps.now()),
    () => deps.gate.keepForJournal([admitted.hold]),
  );
  let result: SegmentResult;
  /** What continuations held beyond the request's own hold, released once the charge is settled. */
  const extraHolds: Hold[] = [];
  try {
    result = await pump(deps, ctx, segment, progress, sink, identity, checkpoints.observe);
    while (
      deps.continuation &&
      result.fault &&
      !result.cancelled &&
      result.content.length > 0 &&
      progress.continuable
    ) {
      const spent = costSoFar([
        ...earlier,
        {
          served: segment.served,
          usage: result.usage,
          promptEstimate: segment.promptEstimate,
          promptCeiling: segment.promptCeiling,
          completionLimit: segment.completionLimit,
          completionText: result.generated,
        },
      ]);
      // Our own failure to continue (a bug) must not cost the charge of what was streamed: no continuation.
      const next = await continueElsewhere(
        deps,
        ctx,
        admitted,
        [segment, ...earlier.map((e) => e.served)],
        progress.content,
        spent,
      ).catch((error: unknown) => {
        deps.log.error({ generation_id: ctx.generationId, err: error }, 'continuing a broken stream failed');
        return null;
      });
      if (!next) break;
      if (next.segment === null) {
        attempts.push(...next.attempts);
        break;
      }
      if (next.extraHold) extraHolds.push(next.extraHold);
      segment.stream.reportEnd({
        fault: result.fault,
        incomplete: true,
        finishedAt: deps.now(),
        completionTokens: null,
      });
      deps.log.warn(
        {
          generation_id: ctx.generationId,
          from: segment.served.endpoint.provider.id,
          to: next.segment.served.endpoint.provider.id,
        },
        'continued a broken stream on another endpoint',
      );
      earlier.push({
        served: segment.served,
        usage: result.usage,
        promptEstimate: segment.promptEstimate,
        promptCeiling: segment.promptCeiling,
        completionLimit: segment.completionLimit,
        completionText: result.generated,
      });
      attempts.push(...next.attempts);
      segment = next.segment;
      identity = {
        id: identity.id,
        created: identity.created,
        model: segment.served.model.id,
        provider: segment.served.endpoint.provider.name,
      };
      result = await pump(deps, ctx, segment, progress, sink, identity, checkpoints.observe);
    }
  } finally {
    // Before the final charge: no checkpoint may follow it (it would not undo it, but it is noise).
    await checkpoints.stop();
  }

  let failure = result.failure;
  const cancelled = result.cancelled;
  const finishedAt = deps.now();
  const charge = await settle(
    deps,
    chargeInput(result, failure, cancelled, finishedAt),
    admitted.hold,
    admitted.capacity,
    extraHolds,
  ).catch((error: unknown) => {
    for (const extra of extraHolds) deps.gate.release(extra);
    deps.log.error(
      { generation_id: ctx.generationId, err: error },
      'could not record the charge of a streamed generation',
    );
    failure = new TollgateError(
      'store.unavailable',
      'The usage of this generation could not be recorded; the answer is incomplete',
      { metadata: { error_type: 'server', reason: 'store_unavailable' } },
    );
    return null;
  });

  segment.stream.reportEnd({
    fault: result.fault,
    incomplete: cancelled || result.fault !== null,
    finishedAt,
    completionTokens: charge?.completionTokens ?? null,
  });
  deps.metrics.timeToFirstToken.observe(
    { model: firstIdentity.model, provider: firstIdentity.provider },
    (outcome.firstContentAt - outcome.startedAt) / 1000,
  );
  if (cancelled || sink.closed) return;
  if (failure) {
    // An answer that broke off after content is charged what it generated: the error chunk says how
    // much (`usage`), as /generation does. Not a usage chunk before it: the error stays the stream's
    // one last word, and no usage chunk ever reads as the end of a finished answer.
    await sink.error(failure, identity, charge);
    return;
  }
  if (charge) await sink.write(renderUsageChunk(identity, charge));
  await sink.done();
}

/** Whether a chunk's choice leaves the answer one a prefill can continue (`Progress.continuable`). */
function continuableDelta(choice: ChunkChoice): boolean {
  const delta = choice.delta;
  if (choice.index !== 0) return false;
  if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return false;
  return typeof delta.refusal !== 'string' || delta.refusal === '';
}

/** Forwards one segment's events until it ends, and says how it ended. */
async function pump(
  deps: ChatDeps,
  ctx: ChatContext,
  segment: Segment,
  progress: Progress,
  sink: StreamSink,
  identity: ResponseIdentity,
  observe?: (live: SegmentResult) => void,
): Promise<SegmentResult> {
  const result: SegmentResult = {
    usage: null,
    content: '',
    generated: '',
    upstreamId: null,
    fault: null,
    failure: null,
    cancelled: false,
  };
  observe?.(result);
  let finished = false;
  /** Choices that began and have not finished (by index); the answer is complete once none is left. */
  const open = new Set<number>();
  let complete = false;
  /** Every chunk's fixed fields, serialised once (again only when the fingerprint first appears). */
  let head: string | null = null;
  let headFingerprint: string | null = null;

  /** Writes one event; a promise only when the caller's socket must drain first. */
  const forward = (event: ChunkEvent): Promise<void> | null => {
    if (event.usage) result.usage = event.usage;
    result.upstreamId ??= event.upstreamId;
    progress.fingerprint ??= event.systemFingerprint;
    if (event.choices.length === 0) return null; // the upstream's usage-only chunk: ours follows the charge
    const choices = segment.continuing ? continuationChoices(segment, event.choices) : event.choices;
    for (const choice of choices as ChunkChoice[]) {
      if (typeof choice.delta.content === 'string') {
        result.content += choice.delta.content;
        progress.content += choice.delta.content;
      }
      result.generated += generatedText(choice.delta);
      if (progress.continuable && !continuableDelta(choice)) progress.continuable = false;
      if (choice.finish_reason !== null) {
        finished = true;
        open.delete(choice.index);
        progress.finishReason = choice.finish_reason;
        progress.nativeFinishReason = choice.native_finish_reason ?? choice.finish_reason;
      } else if (!complete) open.add(choice.index);
    }
    if (finished && !complete && open.size === 0) {
      // Every choice finished: what may follow is the usage, which a caller leaving now must not cut.
      complete = true;
      segment.stream.outliveCaller();
    }
    if (head === null || headFingerprint !== progress.fingerprint) {
      headFingerprint = progress.fingerprint;
      head = chunkHead(identity, headFingerprint);
    }
    return sink.writeJson(chunkJson(head, choices));
  };
  const onMalformed = (reason: string) =>
    deps.log.warn(
      { generation_id: ctx.generationId, provider: segment.served.endpoint.provider.id, reason },
      'a malformed upstream chunk broke the stream',
    );

  let end: StreamEnd;
  try {
    for (const event of segment.held) await forward(event);
    // Ends at `[DONE]`, or at once when the finished answer's last word on usage came (the reader
    // decides: the caller's usage chunk and [DONE] do not wait for the upstream's own end).
    end = await segment.stream.read((event) => {
      if (sink.closed) {
        // The caller left. A complete answer is read on (nothing is written) for the usage the
        // upstream reports after it, so the charge is the provider's count rather than an estimate.
        if (!complete) return STOP;
        if (event.usage) result.usage = event.usage;
        return undefined;
      }
      const wait = forward(event);
      return wait === null ? undefined : wait;
    }, onMalformed);
  } catch (error) {
    // Writing to the caller failed: they are gone, or it is our bug (never the provider's fault).
    segment.stream.close();
    end = { kind: 'local', error };
  }
  if (end.kind === 'stopped') segment.stream.close(); // the caller left
  const thrown =
    end.kind === 'cancelled' || end.kind === 'local' || (end.kind === 'broken' && end.cause === 'transport');
  if (complete && (thrown || end.kind === 'broken')) {
    // The answer was complete; only the trailing usage/[DONE] went missing (the upstream stalled, broke
    // or sent an error after it, shutdown came, or the caller left): finalise normally.
    segment.stream.abort('shutdown');
    return result;
  }
  if (end.kind === 'broken' && end.cause === 'event') {
    result.fault = end.failure.type;
    const message = isServerSide(end.failure) ? serverSideMessage(end.failure) : end.failure.message;
    // The in-band chunk's code: the status the same failure gets before the first byte, not 502 for everything.
    result.failure = inBandError(end.failure, message);
  } else if (end.kind === 'broken' && end.cause === 'malformed') {
    result.fault = 'invalid_response';
    result.failure = new TollgateError('upstream.unavailable', 'The provider sent an invalid stream', {
      metadata: { error_type: 'invalid_response' },
    });
  } else if (thrown) {
    if (sink.closed) result.cancelled = true;
    else if (abortReasonOf(ctx.signal) === 'shutdown') {
      // The caller is still there: end its stream with an error, not a cut connection.
      result.failure = new TollgateError(
        'server.shutting_down',
        'The gateway is shutting down; the answer is incomplete',
        { metadata: { error_type: 'server', reason: 'store_unavailable' } },
      );
    } else if (ctx.signal.aborted || end.kind === 'cancelled') result.cancelled = true;
    else if (end.kind === 'local') {
      deps.log.error({ generation_id: ctx.generationId, err: end.error }, 'relaying a stream failed');
      result.failure = new TollgateError('internal', 'Internal server error');
    } else if (end.kind === 'broken') {
      result.fault = end.failure.type === 'timeout' ? 'timeout' : 'connection';
      result.failure =
        result.fault === 'timeout'
          ? new TollgateError('upstream.timeout', 'The provider stopped sending (stream stalled)', {
              metadata: { error_type: 'timeout' },
            })
          : new TollgateError('upstream.unavailable', 'The provider connection was lost mid-stream', {
              metadata: { error_type: 'provider_unavailable' },
            });
    }
  }
  // A caller who left after the answer was complete did not cut it off.
  if (sink.closed && !complete) result.cancelled = true;
  // `[DONE]` (or the body's end) before every choice finished is a cut answer, never a success.
  if (!result.cancelled && !result.failure && !complete) {
    result.fault = 'invalid_response';
    result.failure = new TollgateError(
      'upstream.unavailable',
      'The provider ended the stream before finishing the answer',
      { metadata: { error_type: 'invalid_response' } },
    );
  }
  if (result.cancelled || result.failure) segment.stream.abort(result.cancelled ? 'client_closed' : 'shutdown');
  return result;
}
