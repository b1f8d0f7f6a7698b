/**
 * The execute loop: try the plan's endpoints until one answers, within bounds — a number of attempts,
 * tries per endpoint, and a time budget. Failover happens only while nothing of the answer has
 * reached the caller (for streams: until the first content event).
 *
 * The model the caller asked for comes first: a transient failure of it (a 5xx, a reset, a 429 — any
 * of them with a Retry-After that fits `max_retry_wait_ms`) is retried on that model — its other providers first, then the
 * failed endpoint after a jittered backoff or the hint — before any fallback model in `models` is
 * used. A model is left for the next one only when it is really unavailable: every endpoint of it
 * tried as often as allowed, behind an open breaker, rate-limited for longer than we wait, or its
 * retry beyond the time budget; `context_length_exceeded` skips the model at once. Retries never use
 * the attempts that the fallback models still need for one try each. No endpoint sees
 * more than two attempts of one request within HAMMER_WINDOW_MS. Every attempt is reported to the
 * health registry, which orders the next requests' plans.
 */
import type { CancelSignal } from '../core/cancellation.js';
import { isTollgateError, TollgateError } from '../core/errors.js';
import type { NormalizedCompletion } from '../providers/types.js';
import { attemptCompletion, attemptStream, type AttemptResult } from './attempt.js';
import {
  circuitOpenError,
  exhaustedError,
  movesOn,
  rejectionError,
  shuttingDownError,
  type AttemptRecord,
} from './failure.js';
import type { HealthRegistry } from './health.js';
import type { PlannedAttempt } from './plan.js';
import type { ExecuteDeps, RetryPolicy } from './execute-deps.js';
import { SecretScrubber } from './secret-scrubber.js';
import type { ChunkEvent, UpstreamStream } from './stream-reader.js';
import { abortReasonOf } from './upstream-client.js';

export type { ExecuteDeps, RetryPolicy } from './execute-deps.js';

/** No endpoint gets a third attempt of one request within this long of the one before the last. */
export const HAMMER_WINDOW_MS = 1_500;

export interface ExecuteInput {
  plan: readonly PlannedAttempt[];
  body: Record<string, unknown>;
  /** The body of one attempt (its endpoint's parameters and completion budget); `body` when absent. */
  bodyFor?(planned: PlannedAttempt): Record<string, unknown>;
  /** Aborts every attempt: the caller went away, or the process is shutting down. */
  signal: CancelSignal;
  /** Capacity limits of the plan's endpoints (limits/capacity.ts); absent when none has any. */
  capacity?: RequestCapacity | undefined;
  /**
   * A non-streamed answer folded from an upstream stream: what the attempt being read has produced
   * so far (for the charge checkpoints of pipeline/stream-checkpoints.ts); null once it ended.
   */
  onFolding?: ((folding: FoldingAnswer | null) => void) | undefined;
}

/** The answer an attempt is folding from its upstream stream, as it stands. */
export interface FoldingAnswer {
  served: PlannedAttempt;
  /** When the attempt's stream opened. */
  openedAt: number;
  soFar(): NormalizedCompletion;
}

/** A capacity limit refused an attempt: it is not sent; the limit frees at `retryAt`. */
export interface CapacityRefusal {
  retryAt: number;
  /** The 429 the caller gets if no other endpoint can serve. */
  error: TollgateError;
}

/** One request's capacity claims (limits/capacity.ts). */
export interface RequestCapacity {
  /** Takes the attempt's capacity before it is sent; a refusal means: skip it, or wait until `retryAt`. */
  acquire(planned: PlannedAttempt, now: number): Promise<CapacityRefusal | null>;
  /** The attempt ended: answered (its tokens are reconciled by `settle`) or not (its tokens are given back). */
  ended(planned: PlannedAttempt, answered: boolean): void;
  /** The attempt acquired will not be sent after all: everything it took (requests and tokens) is given back. */
  withdraw(planned: PlannedAttempt): void;
  /** The served answer's real token count replaces its estimate. */
  settle(tokens: number): void;
}

export type Outcome<T> =
  | ({ ok: true; served: PlannedAttempt } & T & { attempts: AttemptRecord[] })
  | {
      ok: false;
      error: TollgateError;
      attempts: AttemptRecord[];
      /** A non-streamed answer cut (caller gone, shutdown) after the upstream produced part of it: to be charged. */
      partial?: PartialCompletion;
    };

export interface PartialCompletion {
  served: PlannedAttempt;
  /** What was folded before the cut: the upstream's usage if it came, and the text so far. */
  completion: NormalizedCompletion;
  startedAt: number;
  attemptStartedAt: number;
}

export interface CompletionOutcome {
  completion: NormalizedCompletion;
  startedAt: number;
  /** When the serving attempt was sent. */
  attemptStartedAt: number;
}

export interface StreamOutcome {
  /** Chunks read before the attempt committed (role deltas, the first content). */
  held: ChunkEvent[];
  /** The rest of the upstream stream: read, classified and reported by routing/stream-reader.ts. */
  stream: UpstreamStream;
  startedAt: number;
  attemptStartedAt: number;
  /** Time the first content event arrived. */
  firstContentAt: number;
}

interface Entry {
  planned: PlannedAttempt;
  tries: number;
  /** When each try was sent. */
  sentAt: number[];
  notBefore: number;
  exhausted: boolean;
  /** Its last try timed out: retried only when nothing else is left (another wait for a silent endpoint is the slowest choice). */
  timedOut: boolean;
}

function defaultSleep(ms: number, signal: CancelSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Equal jitter: uniform in [½, 1] × base·2^(tries−1), so retries of many requests do not synchronise
 * and none comes back at once.
 */
function backoff(policy: RetryPolicy, tries: number, random: () => number): number {
  return Math.round((0.5 + random() / 2) * policy.retryBackoffMs * 2 ** Math.max(0, tries - 1));
}

/** The earliest a failed entry may be tried again: after its backoff, and never a third time within the hammer window. */
function retryAt(entry: Entry, backoffMs: number, ended: number): number {
  const beforeLast = entry.sentAt.length >= 2 ? entry.sentAt[entry.sentAt.length - 2]! : -Infinity;
  return Math.max(ended + backoffMs, beforeLast + HAMMER_WINDOW_MS);
}

type Choice = { pick: Entry } | { waitUntil: number } | { blocked: PlannedAttempt | null };

/**
 * The next entry to try, model by model in plan order: the first model with an entry ready to go
 * (fewest tries first, so its other providers come before a retry of a failed one); a model whose
 * entries are only waiting for a backoff or a Retry-After that fits the budget is waited for rather
 * than passed over; a model whose remaining entries are all behind an open breaker is passed over.
 */
function choose(
  open: readonly Entry[],
  health: HealthRegistry,
  now: number,
  deadline: number,
  attemptsLeft: number,
): Choice {
  let blocked: PlannedAttempt | null = null;
  const models = [...new Set(open.map((e) => e.planned.model.id))];
  for (const [index, model] of models.entries()) {
    // A retry never takes the last attempts a fallback model needs for its first try.
    const untriedLater = models
      .slice(index + 1)
      .filter((m) => open.every((e) => e.planned.model.id !== m || e.tries === 0)).length;
    const retries = attemptsLeft - 1 >= untriedLater;
    const lastResort = index === models.length - 1 && open.every((e) => e.planned.model.id !== model || e.tries > 0);
    const group = open.filter(
      (e) => e.planned.model.id === model && (e.tries === 0 || (retries && (!e.timedOut || lastResort))),
    );
    for (const entry of [...group].sort((a, b) => a.tries - b.tries)) {
      if (entry.notBefore > now) continue;
      if (health.tryAcquire(entry.planned.healthKey, now)) return { pick: entry };
      blocked ??= entry.planned;
    }
    const waiting = group.filter((e) => e.notBefore > now).map((e) => e.notBefore);
    if (waiting.length > 0) {
      const next = Math.min(...waiting);
      if (next <= deadline) return { waitUntil: next };
    }
  }
  return { blocked };
}

async function loop<T>(
  deps: ExecuteDeps,
  input: ExecuteInput,
  attempt: (planned: PlannedAttempt) => Promise<AttemptResult<T>>,
  /** Streams report their outcome when they end (see stream-relay), not when they commit. */
  successOnCommit: boolean,
): Promise<Outcome<{ value: T; startedAt: number; attemptStartedAt: number }>> {
  const { policy, health } = deps;
  const sleep = deps.sleep ?? defaultSleep;
  const random = deps.random ?? Math.random;
  const startedAt = deps.now();
  const deadline = startedAt + policy.budgetMs;
  const attempts: AttemptRecord[] = [];
  const entries: Entry[] = input.plan.map((planned) => ({
    planned,
    tries: 0,
    sentAt: [],
    notBefore: 0,
    exhausted: false,
    timedOut: false,
  }));
  const skippedModels = new Set<string>();
  let breakerBlocked: PlannedAttempt | null = null;
  let capacityRefusal: CapacityRefusal | null = null;

  while (attempts.length < policy.maxAttempts && !input.signal.aborted) {
    const open = entries.filter(
      (e) => !e.exhausted && e.tries < policy.triesPerEndpoint && !skippedModels.has(e.planned.model.id),
    );
    if (open.length === 0) break;
    const now = deps.now();
    if (attempts.length > 0 && now > deadline) break; // the budget bounds new attempts, not only waits
    const choice = choose(open, health, now, deadline, policy.maxAttempts - attempts.length);
    if ('waitUntil' in choice) {
      await sleep(choice.waitUntil - now, input.signal);
      continue;
    }
    if ('blocked' in choice) {
      breakerBlocked ??= choice.blocked;
      break; // nothing is ready, and no wait fits the budget (or every candidate is behind an open breaker)
    }
    const pick = choice.pick;
    if (input.capacity) {
      // At its quota: not sent. Another endpoint goes first; this one is waited for only if it frees in time.
      let refusal: CapacityRefusal | null;
      try {
        refusal = await input.capacity.acquire(pick.planned, now);
      } catch (error) {
        // A claim that could not be checked (its store down and the limit failing closed): this
        // endpoint is not tried — never an exception out of the loop, past the caller's holds.
        refusal = {
          retryAt: Number.POSITIVE_INFINITY,
          error: isTollgateError(error)
            ? error
            : new TollgateError('internal', 'Internal server error', { cause: error }),
        };
      }
      if (refusal) {
        health.release(pick.planned.healthKey);
        if (!capacityRefusal || refusal.retryAt < capacityRefusal.retryAt) capacityRefusal = refusal;
        if (refusal.retryAt - now <= policy.maxRetryWaitMs && refusal.retryAt <= deadline)
          pick.notBefore = refusal.retryAt;
        else pick.exhausted = true;
        continue;
      }
    }

    pick.tries++;
    const began = deps.now();
    pick.sentAt.push(began);
    const result = await attempt(pick.planned);
    const ended = deps.now();
    const key = pick.planned.healthKey;
    input.capacity?.ended(pick.planned, !('local' in result) && (result.ok || result.partial !== undefined));
    if ('local' in result) {
      // Not the provider's doing (the request could not be built for it, or our own code threw): not
      // retried elsewhere, and nothing recorded in the endpoint's health that other callers share.
      health.release(key);
      return { ok: false, error: result.local, attempts };
    }
    attempts.push({
      providerId: pick.planned.endpoint.provider.id,
      providerName: pick.planned.endpoint.provider.name,
      model: pick.planned.model.id,
      // A cut answer was being served: the provider answered.
      status: result.ok ? result.status : (result.partial?.status ?? result.failure.status),
      latencyMs: ended - began,
      failure: result.ok || result.partial ? null : result.failure,
    });
    if (result.ok) {
      if (successOnCommit && result.healthReported !== true) health.recordSuccess(key, ended, ended - began, null);
      return { ok: true, served: pick.planned, value: result.value, startedAt, attemptStartedAt: began, attempts };
    }
    if (result.cancelled) {
      health.release(key);
      const error = abortReasonOf(input.signal) === 'shutdown' ? shuttingDownError() : exhaustedError(attempts);
      if (!result.partial) return { ok: false, error, attempts };
      return {
        ok: false,
        error,
        attempts,
        partial: { served: pick.planned, completion: result.partial.completion, startedAt, attemptStartedAt: began },
      };
    }
    const failure = result.failure;
    health.recordFailure(key, ended, failure.type, failure.retryAfterMs);
    pick.timedOut = failure.type === 'timeout';
    if (failure.type === 'context_length_exceeded') {
      // Every provider of this model has the same window; a fallback model may not.
      skippedModels.add(pick.planned.model.id);
      if (!entries.some((e) => !skippedModels.has(e.planned.model.id)))
        return { ok: false, error: rejectionError(failure, pick.planned.endpoint.provider.name), attempts };
      continue;
    }
    if (!movesOn(failure))
      return { ok: false, error: rejectionError(failure, pick.planned.endpoint.provider.name), attempts };
    if (failure.type === 'not_found') {
      // The endpoint does not serve the model: asking it again cannot help.
      pick.exhausted = true;
    } else if (failure.retryAfterMs !== null) {
      // Honour the hint — a 429's, or a 503/529 saying when it will be back: come back only after it,
      // and only if waiting that long is acceptable.
      if (failure.retryAfterMs > policy.maxRetryWaitMs || ended + failure.retryAfterMs > deadline)
        pick.exhausted = true;
      else pick.notBefore = retryAt(pick, failure.retryAfterMs, ended);
    } else {
      pick.notBefore = retryAt(pick, backoff(policy, pick.tries, random), ended);
    }
  }
  if (abortReasonOf(input.signal) === 'shutdown') return { ok: false, error: shuttingDownError(), attempts };
  if (attempts.length === 0 && capacityRefusal) return { ok: false, error: capacityRefusal.error, attempts };
  if (attempts.length === 0 && breakerBlocked) {
    return {
      ok: false,
      error: circuitOpenError(breakerBlocked, health.retryInMs(breakerBlocked.healthKey, deps.now())),
      attempts,
    };
  }
  return { ok: false, error: exhaustedError(attempts), attempts };
}

/** The deps of one request: its BYOK keys join the secrets scrubbed from every upstream text. */
function scoped(deps: ExecuteDeps, input: ExecuteInput): ExecuteDeps {
  const own = input.plan.map((p) => p.byok?.apiKey);
  return own.some((k) => k !== undefined)
    ? { ...deps, secrets: (deps.secrets ?? new SecretScrubber()).with(own) }
    : deps;
}

function bodyOf(input: ExecuteInput, planned: PlannedAttempt): Record<string, unknown> {
  return input.bodyFor ? input.bodyFor(planned) : input.body;
}

export async function executeCompletion(
  unscoped: ExecuteDeps,
  input: ExecuteInput,
): Promise<Outcome<CompletionOutcome>> {
  const deps = scoped(unscoped, input);
  const outcome = await loop(
    deps,
    input,
    input.onFolding === undefined
      ? (planned) => attemptCompletion(deps, planned, bodyOf(input, planned), input.signal)
      : async (planned) => {
          const report = input.onFolding!;
          try {
            return await attemptCompletion(deps, planned, bodyOf(input, planned), input.signal, (soFar) =>
              report({ served: planned, openedAt: deps.now(), soFar }),
            );
          } finally {
            report(null);
          }
        },
    true,
  );
  if (!outcome.ok) return outcome;
  return {
    ok: true,
    served: outcome.served,
    completion: outcome.value,
    startedAt: outcome.startedAt,
    attemptStartedAt: outcome.attemptStartedAt,
    attempts: outcome.attempts,
  };
}

export async function executeStream(unscoped: ExecuteDeps, input: ExecuteInput): Promise<Outcome<StreamOutcome>> {
  const deps = scoped(unscoped, input);
  const outcome = await loop(
    deps,
    input,
    (planned) => attemptStream(deps, planned, bodyOf(input, planned), input.signal),
    false,
  );
  if (!outcome.ok) return outcome;
  const { held, stream, firstContentAt } = outcome.value;
  return {
    ok: true,
    served: outcome.served,
    held,
    stream,
    firstContentAt,
    startedAt: outcome.startedAt,
    attemptStartedAt: outcome.attemptStartedAt,
    attempts: outcome.attempts,
  };
}
