/**
 * Relays a committed upstream stream to the caller: chunks forwarded as they arrive (re-labelled
 * with our id, model and provider), the charge committed, then one usage chunk and `[DONE]`.
 * An upstream that dies after content was sent ends in one in-band error chunk, never in a
 * truncated success. A caller that leaves is charged for what was produced.
 */
import { TollgateError } from '../core/errors.js';
import type { ChunkChoice, FailureType, NormalizedUsage, StreamEvent } from '../providers/types.js';
import type { StreamOutcome } from '../routing/execute.js';
import { errorTypeOf, failureFromThrown } from '../routing/failure.js';
import { abortReasonOf } from '../routing/upstream-client.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { AttemptRecord } from '../routing/failure.js';
import type { Admitted, ChatContext, ChatDeps } from './chat-completion.js';
import { identityOf, settle } from './chat-completion.js';
import { renderChunk, renderUsageChunk, type ResponseIdentity } from './completion-shapes.js';

export interface StreamSink {
  /** True once response headers went out (after that, errors are in-band). */
  readonly started: boolean;
  /** True when the caller has gone away. */
  readonly closed: boolean;
  /** Sends `: TOLLGATE PROCESSING` whenever nothing else was written for `intervalMs`. Returns a stop function. */
  keepAlive(intervalMs: number): () => void;
  /** Writes one `data:` event, waiting for the socket to drain when the caller reads slowly. */
  write(payload: unknown): Promise<void>;
  /** One in-band error chunk, `[DONE]`, end. */
  error(error: TollgateError, identity: ResponseIdentity): Promise<void>;
  /** `data: [DONE]`, end. */
  done(): Promise<void>;
}

type Served = { ok: true; served: PlannedAttempt; attempts: AttemptRecord[] } & StreamOutcome;

const MAX_MALFORMED = 3;

export async function relayStream(deps: ChatDeps, ctx: ChatContext, admitted: Admitted, outcome: Served, sink: StreamSink): Promise<void> {
  const identity = identityOf(ctx, outcome.served, outcome.startedAt);
  let content = '';
  let usage: NormalizedUsage | null = null;
  let finishReason: string | null = null;
  let nativeFinishReason: string | null = null;
  let upstreamId: string | null = null;
  let fingerprint: string | null = null;
  let failure: TollgateError | null = null;
  /** Set when the upstream (not the caller, not shutdown) broke the stream: it counts against the endpoint's health. */
  let upstreamFault: FailureType | null = null;
  let cancelled = false;
  let malformed = 0;

  const forward = async (event: Extract<StreamEvent, { kind: 'chunk' }>) => {
    if (event.usage) usage = event.usage;
    upstreamId ??= event.upstreamId;
    fingerprint ??= event.systemFingerprint;
    if (event.choices.length === 0) return; // the upstream's usage-only chunk: ours follows the charge
    for (const choice of event.choices as ChunkChoice[]) {
      if (typeof choice.delta.content === 'string') content += choice.delta.content;
      if (choice.finish_reason !== null) {
        finishReason = choice.finish_reason;
        nativeFinishReason = choice.native_finish_reason ?? choice.finish_reason;
      }
    }
    await sink.write(renderChunk(identity, event.choices, fingerprint));
  };

  let sawDone = false;
  try {
    for (const event of outcome.held) if (event.kind === 'chunk') await forward(event);
    for await (const event of outcome.events) {
      if (sink.closed) break;
      if (event.kind === 'chunk') await forward(event);
      else if (event.kind === 'done') {
        sawDone = true;
        break;
      } else if (event.kind === 'error') {
        upstreamFault = event.failure.type;
        failure = new TollgateError('upstream.unavailable', event.failure.message, { metadata: { error_type: errorTypeOf(event.failure), provider_code: event.failure.providerCode } });
        break;
      } else if (event.kind === 'malformed') {
        deps.log.warn({ generation_id: ctx.generationId, provider: outcome.served.endpoint.provider.id, reason: event.reason }, 'skipped a malformed upstream chunk');
        if (++malformed > MAX_MALFORMED) {
          upstreamFault = 'invalid_response';
          failure = new TollgateError('upstream.unavailable', 'The provider sent an invalid stream', { metadata: { error_type: 'invalid_response' } });
          break;
        }
      }
    }
  } catch (error) {
    if (sink.closed) cancelled = true;
    else if (abortReasonOf(ctx.signal) === 'shutdown') {
      // The caller is still there: end its stream with an error, not a cut connection.
      failure = new TollgateError('server.shutting_down', 'The gateway is shutting down; the answer is incomplete', { metadata: { error_type: 'server' } });
    } else if (ctx.signal.aborted) cancelled = true;
    else {
      const f = failureFromThrown(error, new AbortController().signal);
      const timedOut = (error as { name?: string })?.name === 'AbortError' || f.type === 'timeout';
      upstreamFault = timedOut ? 'timeout' : 'connection';
      failure = timedOut
        ? new TollgateError('upstream.timeout', 'The provider stopped sending (stream stalled)', { metadata: { error_type: 'timeout' } })
        : new TollgateError('upstream.unavailable', 'The provider connection was lost mid-stream', { metadata: { error_type: 'provider_unavailable' } });
    }
  }
  if (sink.closed) cancelled = true;
  if (!cancelled && !failure && !sawDone && finishReason === null) {
    upstreamFault = 'invalid_response';
    failure = new TollgateError('upstream.unavailable', 'The provider ended the stream before finishing the answer', { metadata: { error_type: 'invalid_response' } });
  }
  if (cancelled || failure) outcome.abort(cancelled ? 'client_closed' : 'shutdown');

  const finishedAt = deps.now();
  const charge = await settle(deps, {
    generationId: ctx.generationId,
    accountId: ctx.key.accountId,
    keyHash: ctx.key.hash,
    createdAt: outcome.startedAt,
    served: outcome.served,
    usage,
    promptEstimate: admitted.promptEstimate,
    completionText: content,
    streamed: true,
    cancelled,
    finishReason: failure ? 'error' : cancelled ? null : finishReason,
    nativeFinishReason: failure ? null : nativeFinishReason,
    latencyMs: outcome.firstContentAt - outcome.startedAt,
    generationTimeMs: finishedAt - outcome.startedAt,
    upstreamId,
    app: ctx.app,
    externalUser: admitted.request.user ?? null,
    attempts: outcome.attempts,
    moderationLatencyMs: admitted.moderationLatencyMs,
  }, admitted.hold).catch((error: unknown) => {
    deps.log.error({ generation_id: ctx.generationId, err: error }, 'could not record the charge of a streamed generation');
    failure = new TollgateError('store.unavailable', 'The usage of this generation could not be recorded; the answer is incomplete', { metadata: { error_type: 'server' } });
    return null;
  });

  reportHealth(deps, outcome, upstreamFault, cancelled || upstreamFault !== null, finishedAt, charge?.completionTokens ?? null);
  deps.metrics.timeToFirstToken.observe({ model: identity.model, provider: identity.provider }, (outcome.firstContentAt - outcome.startedAt) / 1000);
  if (cancelled || sink.closed) return;
  if (failure) {
    await sink.error(failure, identity);
    return;
  }
  if (charge) await sink.write(renderUsageChunk(identity, charge));
  await sink.done();
}

/** The stream's outcome for the endpoint's health: its failure, or its latency and throughput. */
function reportHealth(deps: ChatDeps, outcome: Served, fault: FailureType | null, incomplete: boolean, finishedAt: number, completionTokens: number | null): void {
  const health = deps.execute.health;
  const key = outcome.served.healthKey;
  if (fault) {
    health.recordFailure(key, finishedAt, fault, null);
    return;
  }
  const seconds = (finishedAt - outcome.firstContentAt) / 1000;
  const throughput = !incomplete && completionTokens !== null && seconds > 0 ? completionTokens / seconds : null;
  health.recordSuccess(key, finishedAt, outcome.firstContentAt - outcome.attemptStartedAt, throughput);
}
