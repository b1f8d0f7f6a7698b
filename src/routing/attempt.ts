/**
 * One attempt against one endpoint: build the request with the provider's adapter, send it with its
 * own AbortController and timers, and read the answer (non-streamed), or read a stream until its
 * first content event — the commit point after which no failover is possible.
 */
import { completionLimitOf, OutputBudget } from './output-budget.js';
import { TollgateError } from '../core/errors.js';
import type {
  EndpointTarget,
  NormalizedCompletion,
  ProviderAdapter,
  UpstreamFailure,
  UpstreamRequest,
} from '../providers/types.js';
import { byokHeaders } from './byok-headers.js';
import { scrubbingAdapter, SecretScrubber } from './secret-scrubber.js';
import { CompletionAggregator, completionToEvents } from './stream-aggregate.js';
import type { ExecuteDeps } from './execute-deps.js';
import { failureFromThrown, invalidResponse, isTransportError } from './failure.js';
import { nestsTooDeeply, parseUpstreamJson } from '../providers/json-shape.js';
import { UnsendablePartError } from '../providers/openai-input.js';
import { firstTokenLimitMs } from './first-token-limit.js';
import type { PlannedAttempt } from './plan.js';
import type { CatalogProvider } from './catalog.js';
import {
  carriesContent,
  endedWithError,
  isProviderError,
  STOP,
  UpstreamStream,
  type ChunkEvent,
  type StreamEnd,
} from './stream-reader.js';
import { Cancellation, type CancelSignal } from '../core/cancellation.js';
import { AttemptAbort, readBounded, sendUpstream, type AbortReason } from './upstream-client.js';

/** The upstream failed, or the attempt was cancelled (caller gone, shutdown). */
export interface AttemptFailure {
  ok: false;
  failure: UpstreamFailure;
  cancelled: boolean;
  /** A non-streamed answer cut after the upstream started producing it: what was folded so far, to be charged. */
  partial?: { completion: NormalizedCompletion; status: number };
}

/**
 * Not the provider's doing: the request could not be built for it, or our own code threw. Not
 * retried, not recorded in the endpoint's health; the caller gets `error`.
 */
export interface LocalFailure {
  ok: false;
  local: TollgateError;
}

/**
 * `healthReported`: the attempt told the endpoint's health itself (an answer read from an upstream
 * stream knows its real time to first token); otherwise the loop records the attempt's whole latency.
 */
export type AttemptResult<T> =
  { ok: true; value: T; status: number; healthReported?: true } | AttemptFailure | LocalFailure;

class AttemptScope {
  readonly signal = new Cancellation();
  /**
   * The armed deadline (monotonic ms, `performance.now()`, as the timers count) and what its expiry means. A stream re-arms before every read, so
   * arming moves a number; the one timer is replaced only when a deadline comes earlier than it, and
   * when it fires before a moved deadline it sleeps again for the rest.
   */
  private deadline: number | null = null;
  private deadlineReason: AbortReason = 'idle_timeout';
  private armings = 0;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = 0;
  private readonly unlink: () => void;
  /** The caller's leaving no longer ends the attempt (`outliveCaller`); shutdown still does. */
  private outlivesCaller = false;

  constructor(callerSignal: CancelSignal) {
    const onAbort = () => {
      const reason =
        callerSignal.reason instanceof AttemptAbort ? callerSignal.reason : new AttemptAbort('client_closed');
      if (this.outlivesCaller && reason.reason === 'client_closed') return;
      this.signal.abort(reason);
    };
    if (callerSignal.aborted) onAbort();
    callerSignal.addEventListener('abort', onAbort, { once: true });
    this.unlink = () => callerSignal.removeEventListener('abort', onAbort);
  }

  arm(ms: number, reason: AbortReason): () => void {
    const at = performance.now() + ms;
    const arming = ++this.armings;
    this.deadline = at;
    this.deadlineReason = reason;
    if (this.timer === null || this.timerAt > at) this.schedule(at);
    return () => {
      if (this.armings === arming) this.deadline = null;
    };
  }

  private schedule(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.expire, Math.max(1, at - performance.now()));
  }

  private readonly expire = (): void => {
    this.timer = null;
    if (this.deadline === null) return;
    if (performance.now() >= this.deadline) this.signal.abort(new AttemptAbort(this.deadlineReason));
    else this.schedule(this.deadline);
  };

  outliveCaller(): void {
    this.outlivesCaller = true;
  }

  disarm(): void {
    this.deadline = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  get cancelled(): boolean {
    const reason: unknown = this.signal.reason;
    return reason instanceof AttemptAbort && (reason.reason === 'client_closed' || reason.reason === 'shutdown');
  }

  close(): void {
    this.disarm();
    this.unlink();
  }
}

function failed(scope: AttemptScope, error: unknown): AttemptFailure | LocalFailure {
  if (isTransportError(error, scope.signal))
    return { ok: false, failure: failureFromThrown(error, scope.signal), cancelled: scope.cancelled };
  scope.signal.abort(new AttemptAbort('shutdown')); // nothing more is read from this upstream request
  return internalFailure(error);
}

function internalFailure(error: unknown): LocalFailure {
  return { ok: false, local: new TollgateError('internal', 'Internal server error', { cause: error }) };
}

/** Builds (and serialises) the upstream request outside the network part: a failure here is the request's, not the provider's. */
function buildUpstream(
  adapter: ProviderAdapter,
  planned: PlannedAttempt,
  body: Record<string, unknown>,
  stream: boolean,
): UpstreamRequest | LocalFailure {
  try {
    const request = adapter.buildRequest(target(planned), body, stream);
    return planned.byok ? { ...request, headers: byokHeaders(request.headers, adapter.kind) } : request;
  } catch (error) {
    // A part the provider cannot take says which; anything else is a body that would not serialise.
    const message =
      error instanceof UnsendablePartError ? error.message : 'Request body could not be serialised for the provider';
    return { ok: false, local: new TollgateError('request.invalid_body', message, { cause: error }) };
  }
}

/**
 * A non-streamed answer. By default it is read from an upstream stream and folded into one
 * completion, so the first-token and stall timeouts bound it (a silent provider fails over in
 * seconds, not after a whole-response timeout), and an upstream that dies half-way is simply retried
 * elsewhere — the caller has received nothing yet. Providers that cannot stream set
 * `stream_upstream: false` and get one plain request bounded by `response_ms`.
 */
export async function attemptCompletion(
  deps: ExecuteDeps,
  planned: PlannedAttempt,
  body: Record<string, unknown>,
  signal: CancelSignal,
  /** Told, once the upstream stream is open, how to read the answer folded so far (charge checkpoints). */
  folding?: (soFar: () => NormalizedCompletion) => void,
): Promise<AttemptResult<NormalizedCompletion>> {
  if (planned.endpoint.provider.streamUpstream)
    return collectStream(await attemptStream(deps, planned, body, signal), signal, deps.now, folding);
  return attemptPlainCompletion(deps, planned, body, signal);
}

async function collectStream(
  opened: AttemptResult<OpenedStream>,
  signal: CancelSignal,
  now: () => number,
  folding?: (soFar: () => NormalizedCompletion) => void,
): Promise<AttemptResult<NormalizedCompletion>> {
  if (!opened.ok) return opened;
  const { held, stream } = opened.value;
  const aggregate = new CompletionAggregator();
  folding?.(() => aggregate.result());
  for (const event of held) aggregate.add(event);
  let end: StreamEnd;
  try {
    end = await stream.read((event) => aggregate.add(event));
  } catch (error) {
    end = { kind: 'local', error };
  }
  const ended = end.kind === 'done';
  // A break after every choice finished (a reset, a stall or an error event where only the trailing
  // usage or [DONE] was left) does not undo the answer: it is served once, as the relay finalises it.
  let failure: AttemptResult<NormalizedCompletion> | null =
    end.kind === 'broken' && !aggregate.finished
      ? { ok: false, failure: end.failure, cancelled: false }
      : end.kind === 'local'
        ? internalFailure(end.error)
        : null;
  if (signal.aborted && !ended && !aggregate.finished) {
    // The caller left, or shutdown's grace ended, mid-answer: the upstream did produce what was folded
    // so far, and it is charged as a cut stream is (its usage if it came, else an estimate of the text).
    failure = {
      ok: false,
      failure: failureFromThrown(signal.reason, signal),
      cancelled: true,
      partial: { completion: aggregate.result(), status: opened.status },
    };
  }
  if (failure) {
    stream.abort('shutdown');
    return failure;
  }
  // The answer is complete only if every choice finished: `[DONE]` without a finish reason is a cut
  // answer (an upstream that lost its own upstream), as is a body that ends without one.
  if (!aggregate.finished)
    return { ok: false, failure: invalidResponse('stream ended before the answer finished'), cancelled: false };
  const completion = aggregate.result();
  // As a streamed caller's answer reports it: the time to its first token and its throughput — not the
  // whole answer's duration, which would teach the first-token timeout to wait minutes for a hung provider.
  stream.reportEnd({
    fault: null,
    incomplete: false,
    finishedAt: now(),
    completionTokens: completion.usage?.completionTokens ?? null,
  });
  return { ok: true, value: completion, status: opened.status, healthReported: true };
}

async function attemptPlainCompletion(
  deps: ExecuteDeps,
  planned: PlannedAttempt,
  body: Record<string, unknown>,
  signal: CancelSignal,
): Promise<AttemptResult<NormalizedCompletion>> {
  const { provider, timeouts } = planned.endpoint;
  const adapter = scrubbingAdapter(deps.adapterFor(provider.kind), scrubberFor(deps, planned));
  const request = buildUpstream(adapter, planned, body, false);
  if ('local' in request) return request;
  const scope = new AttemptScope(signal);
  try {
    scope.arm(timeouts.response_ms, 'connect_timeout');
    const response = await sendUpstream(deps.dispatcherFor(provider.id), request, scope.signal);
    const text = await readBounded(response.body, 32 * 1024 * 1024);
    scope.disarm();
    if (response.status < 200 || response.status >= 300)
      return { ok: false, failure: adapter.classifyError(response.status, response.headers, text), cancelled: false };
    const completion = parseCompletion(adapter, text, body, provider.wholeAnswerWithoutFinishReason);
    if ('kind' in completion) return { ok: false, failure: invalidResponse(completion.reason), cancelled: false };
    // An answer the provider itself ended with an error is a failure, as in a stream (stream-reader.ts).
    if (completion.choices.some(isProviderError)) return { ok: false, failure: endedWithError(), cancelled: false };
    return { ok: true, value: completion, status: response.status };
  } catch (error) {
    return failed(scope, error);
  } finally {
    scope.close();
  }
}

export interface OpenedStream {
  /** The chunks read up to and including the first content. */
  held: ChunkEvent[];
  /** The rest of the upstream stream (routing/stream-reader.ts). */
  stream: UpstreamStream;
  firstContentAt: number;
}

/** A read that ended before the commit point: the attempt's failure. */
function beforeContent(end: Exclude<StreamEnd, { kind: 'stopped' }>): AttemptFailure | LocalFailure {
  switch (end.kind) {
    case 'done':
    case 'eof':
      return { ok: false, failure: invalidResponse('stream ended before any content'), cancelled: false };
    case 'broken':
      return { ok: false, failure: end.failure, cancelled: false };
    case 'cancelled':
      return { ok: false, failure: end.failure, cancelled: true };
    case 'local':
      return internalFailure(end.error);
  }
}

export async function attemptStream(
  deps: ExecuteDeps,
  planned: PlannedAttempt,
  body: Record<string, unknown>,
  signal: CancelSignal,
): Promise<AttemptResult<OpenedStream>> {
  const { provider, timeouts } = planned.endpoint;
  const adapter = scrubbingAdapter(deps.adapterFor(provider.kind), scrubberFor(deps, planned));
  const request = buildUpstream(adapter, planned, body, true);
  if ('local' in request) return request;
  const scope = new AttemptScope(signal);
  const control = {
    signal: scope.signal,
    abort: (reason: AbortReason) => scope.signal.abort(new AttemptAbort(reason)),
    onClose: () => scope.close(),
    outliveCaller: () => scope.outliveCaller(),
    health: { registry: deps.health, key: planned.healthKey, attemptStartedAt: deps.now() },
    output: outputBudget(deps, body, planned.endpoint.contextLength),
  };
  let committed = false;
  try {
    scope.arm(timeouts.connect_ms, 'connect_timeout');
    const response = await sendUpstream(deps.dispatcherFor(provider.id), request, scope.signal);
    if (response.status < 200 || response.status >= 300) {
      // The status is in: its body gets a connect budget of its own (not what is left of the first),
      // and one that does not come in time, or breaks, leaves the status and headers to say what failed.
      scope.arm(timeouts.connect_ms, 'connect_timeout');
      let text = '';
      try {
        text = await readBounded(response.body);
      } catch (error) {
        if (scope.cancelled) return failed(scope, error);
      }
      return { ok: false, failure: adapter.classifyError(response.status, response.headers, text), cancelled: false };
    }
    if (isJson(response.headers)) {
      // The upstream ignored `stream: true` and answered whole: serve it as a (one-chunk) stream.
      scope.arm(timeouts.idle_ms, 'idle_timeout');
      const completion = parseCompletion(
        adapter,
        await readBounded(response.body, 32 * 1024 * 1024),
        body,
        provider.wholeAnswerWithoutFinishReason,
      );
      scope.disarm();
      if ('kind' in completion) return { ok: false, failure: invalidResponse(completion.reason), cancelled: false };
      const [first, ...rest] = completionToEvents(completion);
      committed = true;
      scope.close();
      // The whole answer is in hand: nothing is left to stop.
      const stream = UpstreamStream.fromEvents(rest, { ...control, abort: () => undefined, output: null });
      stream.firstContentAt = deps.now();
      return {
        ok: true,
        status: response.status,
        value: { held: [first], stream, firstContentAt: stream.firstContentAt },
      };
    }
    // Until the first content event, the first-token budget bounds the wait; after it, the idle budget.
    let firstTokenDeadline: number | null =
      deps.now() + firstTokenLimitMs(planned, deps.health, deps.policy.adaptiveFirstToken ?? null, deps.now());
    const armIdle = () => {
      if (firstTokenDeadline !== null)
        return scope.arm(Math.max(1, firstTokenDeadline - deps.now()), 'first_token_timeout');
      return scope.arm(timeouts.idle_ms, 'idle_timeout');
    };
    const stream = UpstreamStream.fromBody({ body: response.body, adapter, request: body, armIdle }, control);
    const held: ChunkEvent[] = [];
    const end = await stream.read((event) => {
      held.push(event);
      return carriesContent(event) ? STOP : undefined;
    });
    if (end.kind !== 'stopped') return beforeContent(end);
    firstTokenDeadline = null;
    committed = true;
    stream.firstContentAt = deps.now();
    return { ok: true, status: response.status, value: { held, stream, firstContentAt: stream.firstContentAt } };
  } catch (error) {
    return failed(scope, error);
  } finally {
    if (!committed) {
      scope.signal.abort(new AttemptAbort('shutdown'));
      scope.close();
    }
  }
}

/** A stop for an upstream that writes far past the completion limit this attempt sends (output-budget.ts). */
function outputBudget(
  deps: ExecuteDeps,
  body: Readonly<Record<string, unknown>>,
  contextLength: number,
): OutputBudget | null {
  if (deps.countTokens === undefined) return null;
  return new OutputBudget(completionLimitOf(body), deps.countTokens, contextLength);
}

/** Every upstream text of this attempt is scrubbed of the configured keys, the request's BYOK keys and this attempt's own key. */
function scrubberFor(deps: ExecuteDeps, planned: PlannedAttempt): SecretScrubber {
  return (deps.secrets ?? new SecretScrubber()).with([planned.endpoint.provider.apiKey, planned.byok?.apiKey]);
}

function parseCompletion(
  adapter: ProviderAdapter,
  text: string,
  request: Record<string, unknown>,
  withoutFinish: CatalogProvider['wholeAnswerWithoutFinishReason'],
): NormalizedCompletion | { kind: 'malformed'; reason: string } {
  let json: unknown;
  try {
    json = parseUpstreamJson(text);
  } catch {
    return { kind: 'malformed', reason: 'response body is not JSON' };
  }
  // Parsed, but past any real answer's depth: walking it further could overflow the stack.
  if (nestsTooDeeply(text)) return { kind: 'malformed', reason: 'response JSON is nested too deeply' };
  const completion = adapter.parseResponse(json, request);
  if ('kind' in completion) return completion;
  // A whole answer says how each choice ended; one that does not may be cut short, as a stream that
  // ends before every choice finished: never served (or charged) as a success — unless the operator
  // declared the provider a server that leaves the field out of whole answers.
  const unfinished = completion.choices.findIndex((choice) => choice.finish_reason === null);
  if (unfinished < 0) return completion;
  if (withoutFinish === 'invalid')
    return { kind: 'malformed', reason: `response choices[${unfinished}] has no finish_reason` };
  return {
    ...completion,
    choices: completion.choices.map((choice) =>
      choice.finish_reason === null ? { ...choice, finish_reason: 'stop' } : choice,
    ),
  };
}

function isJson(headers: Record<string, string | string[] | undefined>): boolean {
  const type = headers['content-type'];
  return typeof type === 'string' && type.toLowerCase().includes('application/json');
}

function target(planned: PlannedAttempt): EndpointTarget {
  const { provider } = planned.endpoint;
  return {
    providerId: provider.id,
    baseUrl: provider.baseUrl,
    apiKey: planned.byok?.apiKey ?? provider.apiKey,
    upstreamModel: planned.endpoint.upstreamModel,
    // The operator's extra headers go with the operator's key only (byok-headers.ts).
    extraHeaders: planned.byok ? {} : { ...provider.headers },
    structuredOutputs: planned.endpoint.supportedParameters.includes('structured_outputs'),
  };
}
