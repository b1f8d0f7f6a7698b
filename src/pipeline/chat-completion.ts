/**
 * POST /chat/completions, as a list of steps in the order they run, each one hop away:
 *   context   the route (http/routes/chat.ts): the key (authenticated from the header), the
 *             generation id, the abort signal → `ChatContext`
 *   validate  `validate` below (chat-request.ts's schema), then keys pasted into messages (key-leak-step.ts)
 *   plan      `plan` below (routing/plan.ts), then features priced above the catalog (upstream-parameters.ts)
 *   moderate  moderation-step.ts, before anything is reserved: a refused request changes nothing
 *   admit     `admit` below: the credit hold, a free-model slot, capacity per attempt
 *   execute   routing/execute.ts: attempts with failover until one answers
 *   then, not streamed (`completeChat`):  settle (settle.ts) → respond (completion-shapes.ts):
 *             the charge is committed before the answer is sent;
 *   streamed (`streamChat`):  respond (stream-relay.ts writes each event as it is read) → settle at
 *             the stream's end (stream-relay.ts calls settle.ts).
 * The stream variant writes through a StreamSink, so this file never sees the web framework.
 */
import { isTollgateError, TollgateError } from '../core/errors.js';
import type { Hold } from '../billing/credit-gate.js';
import { estimatePromptTokenRange, promptCeilingOf, unknownFieldTokens } from '../billing/token-estimate.js';
import { executeCompletion, executeStream, type FoldingAnswer } from '../routing/execute.js';
import type { AttemptRecord } from '../routing/failure.js';
import { planAttempts, type PlannedAttempt } from '../routing/plan.js';
import type { NormalizedCompletion } from '../providers/types.js';
import type { KeyRecord } from '../store/types.js';
import type { ByokCredential } from '../routing/byok-credentials.js';
import { chatRequestSchema, describeIssues, type ChatRequest } from './chat-request.js';
import type { Admitted, ChatContext, ChatDeps } from './chat-types.js';
import { renderCompletion } from './completion-shapes.js';
import { generatedTextOf, type ChargeInput } from './generation.js';
import { scrubKeysFromRequest } from './key-leak-step.js';
import { moderateRequest } from './moderation-step.js';
import { identityOf, settle } from './settle.js';
import { startCheckpoints } from './stream-checkpoints.js';
import { relayStream, type StreamSink } from './stream-relay.js';
import { refuseCostlyFeatures } from './upstream-parameters.js';
import { holdWithByokFee, prepareUpstream } from './upstream-request.js';

export type { Admitted, ChatContext, ChatDeps } from './chat-types.js';

export function validate(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new TollgateError('request.invalid_body', 'Request body must be a JSON object');
  }
  const parsed = chatRequestSchema.safeParse(withModelFromModels(body as Record<string, unknown>));
  if (!parsed.success)
    throw new TollgateError('request.invalid_body', `Invalid request: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * `models` without `model` (as OpenRouter takes it, and @openrouter/sdk types `model` optional): the
 * first of `models` is the model, the others its fallbacks. Neither is still a 400 (`model` required).
 */
function withModelFromModels(body: Record<string, unknown>): Record<string, unknown> {
  if (body.model !== undefined && body.model !== null) return body;
  const first: unknown = Array.isArray(body.models) ? body.models[0] : undefined;
  return typeof first === 'string' ? { ...body, model: first } : body;
}

/** Request fields an endpoint must support when the caller sets `provider.require_parameters`. */
const ROUTED_PARAMETERS = [
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'repetition_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'response_format',
  'tools',
  'tool_choice',
  'reasoning',
  'reasoning_effort',
  'include_reasoning',
] as const;

/** What a set request field requires of an endpoint: the legacy reasoning fields require reasoning. */
const ROUTED_AS: Readonly<Partial<Record<(typeof ROUTED_PARAMETERS)[number], string>>> = {
  max_completion_tokens: 'max_tokens',
  reasoning_effort: 'reasoning',
  include_reasoning: 'reasoning',
};

export function plan(
  deps: Pick<ChatDeps, 'catalog' | 'execute' | 'now'>,
  request: ChatRequest,
  key: KeyRecord,
  byok: readonly ByokCredential[] = [],
): PlannedAttempt[] {
  // Every attempt carries a completion limit, built for its endpoint (README, "The overspend bound"):
  // `max_completion_tokens` asks for what an endpoint listing `max_tokens` does, not for a listing of its own;
  // a reasoning field, for an endpoint that takes reasoning in any of its forms (`endpointTakes`).
  const requestedParameters = [
    ...new Set(
      ROUTED_PARAMETERS.filter((name) => request[name] !== undefined && request[name] !== null).map(
        (name) => ROUTED_AS[name] ?? name,
      ),
    ),
  ];
  const usesTools = Array.isArray(request.tools) && request.tools.length > 0;
  return planAttempts(
    deps.catalog,
    { model: request.model, models: request.models, provider: request.provider, requestedParameters, byok, usesTools },
    key,
    deps.execute.health,
    deps.now(),
  );
}

/** The request fields the schema knows (what it reads as prompt is counted by name in the estimate). */
const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.keys(chatRequestSchema.shape));

export async function admit(deps: ChatDeps, ctx: ChatContext): Promise<Admitted> {
  const request = scrubKeysFromRequest(deps.keyLeaks, validate(ctx.body));
  let attempts = plan(deps, request, ctx.key, await deps.byok.forKey(ctx.key.accountId, ctx.key.hash));
  refuseCostlyFeatures(request, attempts);
  // Moderation before any reservation or count: a refused request costs nothing and changes nothing.
  const moderationLatencyMs = await moderateRequest(deps.moderation, ctx, request, attempts);
  const prompt = estimatePromptTokenRange(request.messages, request);
  const promptEstimate = prompt.upper;
  // Every field beside the messages too: an endpoint may be sent fields it reads as prompt that no
  // schema here knows (vLLM's `documents`, rendered into the prompt by a RAG chat template) — within
  // the ceiling of what a provider's count is charged, and held for. Not in `promptEstimate`, what a
  // prompt with no count from the provider is charged: an endpoint that does not list such a field
  // was never sent it (an outside check: a cut stream charged 45,685 prompt tokens for 8 sent).
  const { messages: _messages, ...besideMessages } = request as Record<string, unknown>;
  const promptCeiling = promptCeilingOf(request.messages, besideMessages);
  const unknownFields = Object.entries(besideMessages)
    .filter(([name]) => !KNOWN_FIELDS.has(name))
    .map(([, value]) => value);
  const held = { likely: prompt.likely, upper: prompt.upper + unknownFieldTokens(unknownFields) };
  let upstream = prepareUpstream(request, attempts, held);
  let hold: Hold;
  try {
    hold = await deps.gate.admit(
      ctx.key,
      attempts.some((a) => !a.model.isFree),
      holdWithByokFee(upstream.hold, ctx.key.includeByokInLimit, attempts, deps.byokFeeBasisPoints),
      ctx.generationId,
    );
  } catch (error) {
    // Free and paid models together (`models`), and the account cannot pay: its free models alone
    // serve it (they need a balance that is not negative, and hold nothing).
    const free = attempts.filter((a) => a.model.isFree);
    const insufficient = isTollgateError(error) && error.code === 'billing.insufficient_credits';
    if (!insufficient || free.length === 0 || free.length === attempts.length) throw error;
    attempts = free;
    upstream = prepareUpstream(request, attempts, held);
    hold = await deps.gate.admit(ctx.key, false, 0n);
  }
  // Capacity is taken per attempt (routing/execute.ts), each holding its prompt estimate + its budget
  // in tokens; so is the free-model slot, once, before the first attempt at a `:free` model (after the
  // credit checks: a 402 uses none; a request its paid models serve uses none either).
  const capacity = deps.freeModels.forRequest(
    attempts,
    () => deps.gate.account(ctx.key.accountId),
    // No request weighs more than the endpoint's context: the upper prompt estimate plus a budget from
    // the likely one can pass it, and would never fit a tokens-per-minute quota set at the context.
    deps.capacity?.forRequest(attempts, (p) =>
      Math.min(promptEstimate + upstream.budgetFor(p), p.endpoint.contextLength),
    ) ?? null,
  );
  return {
    request,
    plan: attempts,
    hold,
    promptEstimate,
    promptCeiling,
    moderationLatencyMs,
    upstreamBody: request as Record<string, unknown>,
    bodyFor: upstream.bodyFor,
    budgetFor: upstream.budgetFor,
    capacity,
  };
}

export function recordAttempts(deps: ChatDeps, attempts: readonly AttemptRecord[]): void {
  for (const a of attempts)
    deps.metrics.upstreamAttempts.inc({ provider: a.providerId, outcome: a.failure ? a.failure.type : 'ok' });
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export async function completeChat(deps: ChatDeps, ctx: ChatContext): Promise<JsonResponse> {
  const admitted = await admit(deps, ctx);
  /** What a (possibly cut) non-streamed answer is charged. */
  const chargeInput = (
    answer: { served: PlannedAttempt; completion: NormalizedCompletion; startedAt: number },
    attempts: readonly AttemptRecord[],
    end: { cancelled: boolean; finishReason: string | null; nativeFinishReason: string | null },
  ): ChargeInput => {
    const endedAt = deps.now();
    return {
      generationId: ctx.generationId,
      accountId: ctx.key.accountId,
      keyHash: ctx.key.hash,
      createdAt: answer.startedAt,
      served: answer.served,
      usage: answer.completion.usage,
      promptEstimate: admitted.promptEstimate,
      promptCeiling: admitted.promptCeiling,
      completionLimit: admitted.budgetFor(answer.served),
      completionText: generatedTextOf(answer.completion),
      streamed: false,
      ...end,
      latencyMs: endedAt - answer.startedAt,
      generationTimeMs: endedAt - answer.startedAt,
      upstreamId: answer.completion.upstreamId,
      app: ctx.app,
      externalUser: admitted.request.user ?? null,
      attempts,
      moderationLatencyMs: admitted.moderationLatencyMs,
    };
  };
  /** Commits the charge of a (possibly cut) non-streamed answer. */
  const charge = (
    answer: { served: PlannedAttempt; completion: NormalizedCompletion; startedAt: number },
    attempts: readonly AttemptRecord[],
    end: { cancelled: boolean; finishReason: string | null; nativeFinishReason: string | null },
  ) => settle(deps, chargeInput(answer, attempts, end), admitted.hold, admitted.capacity);
  // An answer folded from an upstream stream is journaled now and then, as a streamed one is: the
  // provider produced it, so a process killed before the answer is done still charges it. (A plan of
  // `stream_upstream: false` endpoints only has nothing to fold: no timer.)
  let folding: FoldingAnswer | null = null;
  const checkpoints =
    deps.checkpointMs === undefined || !admitted.plan.some((p) => p.endpoint.provider.streamUpstream)
      ? null
      : startCheckpoints(
          deps,
          () =>
            chargeInput({ served: folding!.served, completion: folding!.soFar(), startedAt: folding!.openedAt }, [], {
              cancelled: false,
              finishReason: 'error',
              nativeFinishReason: null,
            }),
          () => deps.gate.keepForJournal([admitted.hold]),
        );
  checkpoints?.observe({
    get generated() {
      return folding ? generatedTextOf(folding.soFar()) : '';
    },
  });
  try {
    let outcome: Awaited<ReturnType<typeof executeCompletion>>;
    try {
      outcome = await executeCompletion(deps.execute, {
        plan: admitted.plan,
        body: admitted.upstreamBody,
        bodyFor: admitted.bodyFor,
        signal: ctx.signal,
        capacity: admitted.capacity ?? undefined,
        onFolding: checkpoints ? (answer) => (folding = answer) : undefined,
      });
    } finally {
      // Before the final charge: no checkpoint may follow it.
      await checkpoints?.stop();
    }
    // Every attempt failed and none is charged: a checkpoint of one that broke after producing part of
    // an answer (then failed over) must not be charged by a replay.
    if (checkpoints && !outcome.ok && !outcome.partial) await deps.settler.withdrawCheckpoints(ctx.generationId);
    recordAttempts(deps, outcome.attempts);
    if (!outcome.ok) {
      if (outcome.error.cause !== undefined) {
        deps.log[outcome.error.code === 'internal' ? 'error' : 'warn'](
          { generation_id: ctx.generationId, err: outcome.error },
          'an attempt failed on a local error',
        );
      }
      if (outcome.partial) {
        // Cut mid-answer (the caller left, or shutdown's grace ended): the upstream produced tokens, so
        // it is charged as a cut stream is (stream-relay): its usage if it came, else an estimate of the
        // text so far. A caller who left is written nothing; shutdown answers 503 after the charge.
        const shutdown = outcome.error.code === 'server.shutting_down';
        await charge(outcome.partial, outcome.attempts, {
          cancelled: !shutdown,
          finishReason: shutdown ? 'error' : null,
          nativeFinishReason: null,
        });
      }
      throw outcome.error;
    }
    const first = outcome.completion.choices[0];
    const charged = await charge(outcome, outcome.attempts, {
      cancelled: false,
      finishReason: first?.finish_reason ?? null,
      nativeFinishReason: first?.native_finish_reason ?? null,
    });
    deps.metrics.timeToFirstToken.observe(
      { model: charged.record.model, provider: charged.record.providerName ?? 'unknown' },
      (deps.now() - outcome.startedAt) / 1000,
    );
    const identity = identityOf(ctx, outcome.served, outcome.startedAt);
    return {
      status: 200,
      body: renderCompletion(identity, outcome.completion.choices, outcome.completion.systemFingerprint, charged),
    };
  } finally {
    deps.gate.release(admitted.hold);
  }
}

/** Streams the answer; resolves to the name of the provider that served it (null when none did). */
export async function streamChat(deps: ChatDeps, ctx: ChatContext, sink: StreamSink): Promise<string | null> {
  const admitted = await admit(deps, ctx);
  const stopKeepAlive = sink.keepAlive(deps.keepAliveMs);
  try {
    const outcome = await executeStream(deps.execute, {
      plan: admitted.plan,
      body: admitted.upstreamBody,
      bodyFor: admitted.bodyFor,
      signal: ctx.signal,
      capacity: admitted.capacity ?? undefined,
    });
    recordAttempts(deps, outcome.attempts);
    if (!outcome.ok) {
      // Before anything was written the caller gets a real HTTP status; after keep-alives, an in-band error.
      if (!sink.started) throw outcome.error;
      await sink.error(outcome.error, {
        id: ctx.generationId,
        created: Math.floor(deps.now() / 1000),
        model: admitted.request.model,
        provider: outcome.attempts.at(-1)?.providerName ?? '',
      });
      return null;
    }
    await relayStream(deps, ctx, admitted, outcome, sink);
    return outcome.served.endpoint.provider.name;
  } finally {
    stopKeepAlive();
    deps.gate.release(admitted.hold);
  }
}
