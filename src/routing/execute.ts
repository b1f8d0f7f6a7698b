/**
 * The execute loop: try the plan's endpoints until one answers, within bounds — a number of attempts,
 * tries per endpoint, and a time budget. Failover happens only while nothing of the answer has
 * reached the caller (for streams: until the first content event). A failed endpoint is retried
 * after a jittered backoff, and after its `Retry-After` when that fits the budget; other endpoints
 * are tried first meanwhile. Endpoints whose circuit breaker is open are skipped. Every attempt is
 * reported to the health registry, which orders the next requests' plans.
 */
import type { Dispatcher } from 'undici';
import type { TollgateError } from '../core/errors.js';
import type { NormalizedCompletion, ProviderAdapter, ProviderKind, StreamEvent } from '../providers/types.js';
import { attemptCompletion, attemptStream, type AttemptResult } from './attempt.js';
import { circuitOpenError, exhaustedError, movesOn, rejectionError, shuttingDownError, type AttemptRecord } from './failure.js';
import type { HealthRegistry } from './health.js';
import type { PlannedAttempt } from './plan.js';
import { SecretScrubber } from './secret-scrubber.js';
import { abortReasonOf, type AbortReason } from './upstream-client.js';

export interface RetryPolicy {
  maxAttempts: number;
  budgetMs: number;
  triesPerEndpoint: number;
  retryBackoffMs: number;
  maxRetryWaitMs: number;
}

export interface ExecuteDeps {
  dispatcherFor(providerId: string): Dispatcher;
  adapterFor(kind: ProviderKind): ProviderAdapter;
  now(): number;
  health: HealthRegistry;
  policy: RetryPolicy;
  /** Waits (abortably); injectable so tests of the loop need no real time. */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  /** [0, 1): jitter source. */
  random?(): number;
  /** Scrubs upstream texts of the configured provider keys (and, per request, its BYOK keys). */
  secrets?: SecretScrubber;
}

export interface ExecuteInput {
  plan: readonly PlannedAttempt[];
  body: Record<string, unknown>;
  /** The body of one attempt (its endpoint's parameters and completion budget); `body` when absent. */
  bodyFor?(planned: PlannedAttempt): Record<string, unknown>;
  /** Aborts every attempt: the caller went away, or the process is shutting down. */
  signal: AbortSignal;
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
  /** Events read before the attempt committed (role deltas, the first content). */
  held: StreamEvent[];
  events: AsyncGenerator<StreamEvent, void, undefined>;
  startedAt: number;
  attemptStartedAt: number;
  /** Time the first content event arrived. */
  firstContentAt: number;
  /** Ends the upstream request (caller gone, or shutdown). */
  abort(reason: AbortReason): void;
}

interface Entry {
  planned: PlannedAttempt;
  tries: number;
  notBefore: number;
  exhausted: boolean;
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
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

/** Full jitter: uniform in [0, base·2^(tries−1)], so retries of many requests do not synchronise. */
function backoff(policy: RetryPolicy, tries: number, random: () => number): number {
  return Math.round(random() * policy.retryBackoffMs * 2 ** Math.max(0, tries - 1));
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
  const entries: Entry[] = input.plan.map((planned) => ({ planned, tries: 0, notBefore: 0, exhausted: false }));
  const skippedModels = new Set<string>();
  let breakerBlocked: PlannedAttempt | null = null;

  while (attempts.length < policy.maxAttempts && !input.signal.aborted) {
    const open = entries.filter((e) => !e.exhausted && e.tries < policy.triesPerEndpoint && !skippedModels.has(e.planned.model.id));
    if (open.length === 0) break;
    const now = deps.now();
    if (attempts.length > 0 && now > deadline) break; // the budget bounds new attempts, not only waits
    let pick: Entry | null = null;
    // Fewest tries first (plan order among equals): a failed endpoint is retried only after every
    // other candidate had its turn, however short its jittered backoff was.
    for (const entry of [...open].sort((a, b) => a.tries - b.tries)) {
      if (entry.notBefore > now) continue;
      if (health.tryAcquire(entry.planned.healthKey, now)) {
        pick = entry;
        break;
      }
      breakerBlocked ??= entry.planned;
    }
    if (!pick) {
      // Nothing ready: wait for the earliest retry if it fits the budget, else stop.
      const waiting = open.filter((e) => e.notBefore > now);
      if (waiting.length === 0) break; // every candidate is behind an open breaker
      const next = Math.min(...waiting.map((e) => e.notBefore));
      if (next > deadline) break;
      await sleep(next - now, input.signal);
      continue;
    }

    pick.tries++;
    const began = deps.now();
    const result = await attempt(pick.planned);
    const ended = deps.now();
    const key = pick.planned.healthKey;
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
      if (successOnCommit) health.recordSuccess(key, ended, ended - began, null);
      return { ok: true, served: pick.planned, value: result.value, startedAt, attemptStartedAt: began, attempts };
    }
    if (result.cancelled) {
      health.release(key);
      const error = abortReasonOf(input.signal) === 'shutdown' ? shuttingDownError() : exhaustedError(attempts);
      if (!result.partial) return { ok: false, error, attempts };
      return { ok: false, error, attempts, partial: { served: pick.planned, completion: result.partial.completion, startedAt, attemptStartedAt: began } };
    }
    const failure = result.failure;
    health.recordFailure(key, ended, failure.type, failure.retryAfterMs);
    if (failure.type === 'context_length_exceeded') {
      // Every provider of this model has the same window; a fallback model may not.
      skippedModels.add(pick.planned.model.id);
      if (!entries.some((e) => !skippedModels.has(e.planned.model.id))) return { ok: false, error: rejectionError(failure, pick.planned.endpoint.provider.name), attempts };
      continue;
    }
    if (!movesOn(failure)) return { ok: false, error: rejectionError(failure, pick.planned.endpoint.provider.name), attempts };
    if (failure.type === 'rate_limited' && failure.retryAfterMs !== null) {
      // Honour the hint: come back only after it, and only if waiting that long is acceptable.
      if (failure.retryAfterMs > policy.maxRetryWaitMs || ended + failure.retryAfterMs > deadline) pick.exhausted = true;
      else pick.notBefore = ended + failure.retryAfterMs;
    } else {
      pick.notBefore = ended + backoff(policy, pick.tries, random);
    }
  }
  if (abortReasonOf(input.signal) === 'shutdown') return { ok: false, error: shuttingDownError(), attempts };
  if (attempts.length === 0 && breakerBlocked) {
    return { ok: false, error: circuitOpenError(breakerBlocked, health.retryInMs(breakerBlocked.healthKey, deps.now())), attempts };
  }
  return { ok: false, error: exhaustedError(attempts), attempts };
}

/** The deps of one request: its BYOK keys join the secrets scrubbed from every upstream text. */
function scoped(deps: ExecuteDeps, input: ExecuteInput): ExecuteDeps {
  const own = input.plan.map((p) => p.byok?.apiKey);
  return own.some((k) => k !== undefined) ? { ...deps, secrets: (deps.secrets ?? new SecretScrubber()).with(own) } : deps;
}

function bodyOf(input: ExecuteInput, planned: PlannedAttempt): Record<string, unknown> {
  return input.bodyFor ? input.bodyFor(planned) : input.body;
}

export async function executeCompletion(unscoped: ExecuteDeps, input: ExecuteInput): Promise<Outcome<CompletionOutcome>> {
  const deps = scoped(unscoped, input);
  const outcome = await loop(deps, input, (planned) => attemptCompletion(deps, planned, bodyOf(input, planned), input.signal), true);
  if (!outcome.ok) return outcome;
  return { ok: true, served: outcome.served, completion: outcome.value, startedAt: outcome.startedAt, attemptStartedAt: outcome.attemptStartedAt, attempts: outcome.attempts };
}

export async function executeStream(unscoped: ExecuteDeps, input: ExecuteInput): Promise<Outcome<StreamOutcome>> {
  const deps = scoped(unscoped, input);
  const outcome = await loop(deps, input, (planned) => attemptStream(deps, planned, bodyOf(input, planned), input.signal), false);
  if (!outcome.ok) return outcome;
  const { held, events, firstContentAt, abort } = outcome.value;
  return {
    ok: true,
    served: outcome.served,
    held,
    events,
    firstContentAt,
    abort,
    startedAt: outcome.startedAt,
    attemptStartedAt: outcome.attemptStartedAt,
    attempts: outcome.attempts,
  };
}
