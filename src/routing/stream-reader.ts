/**
 * Reading an upstream stream, in one place for every path (docs/architecture.md, "Streams"): the
 * attempt reads it up to its first content (the commit point), then the non-streamed path folds the
 * rest into one completion and the streamed path relays it — all through `UpstreamStream.read`,
 * which applies the limits (a malformed event breaks the stream, the SSE line and event caps, the
 * stall timer), classifies how the stream ended (the upstream's fault, our cancel, our bug) and reports a
 * committed stream's outcome to the endpoint's health. Its consumers only fold or write.
 *
 * The stall (idle) timer is armed only while we wait on the upstream — never while the caller is
 * slow to take the next event, so a slow client is backpressure, not a provider stall.
 */
import { SseLimitError, SseParser } from '../streaming/sse-parser.js';
import {
  isFinalUsage,
  type FailureType,
  type ProviderAdapter,
  type ProviderKind,
  type StreamEvent,
  type UpstreamFailure,
} from '../providers/types.js';
import { failureFromThrown, invalidResponse, isTransportError } from './failure.js';
import { nestsTooDeeply } from '../providers/json-shape.js';
import type { HealthRegistry } from './health.js';
import type { CancelState } from '../core/cancellation.js';
import { abortReasonOf, type AbortReason } from './upstream-client.js';
import type { OutputBudget } from './output-budget.js';

/** Reads that bring only a piece of one event and still re-arm the idle budget (README "Timeouts"). */
export const MAX_PIECES_PER_EVENT = 8;

export type ChunkEvent = Extract<StreamEvent, { kind: 'chunk' }>;

/** A chunk handler's answer that stops reading and leaves the stream open for a later `read`. */
export const STOP = Symbol('stop');
export type ChunkHandler = (event: ChunkEvent) => void | typeof STOP | Promise<void | typeof STOP>;

/** How a `read` ended. */
export type StreamEnd =
  /**
   * `[DONE]` — or, before it, the provider's last word on usage of an answer whose every choice has
   * finished (`closesAnswer`): nothing the answer needs is left, and the rest of the body is drained.
   */
  | { kind: 'done' }
  /** The body ended without `[DONE]` (complete only if every choice finished). */
  | { kind: 'eof' }
  /** The handler answered STOP. */
  | { kind: 'stopped' }
  /**
   * The upstream broke it: an in-band error event, a malformed event, or a transport failure (a
   * reset, a stall past the idle budget); `cause` says which.
   */
  | { kind: 'broken'; failure: UpstreamFailure; cause: 'event' | 'malformed' | 'transport' }
  /** Our side ended it: the caller left or the process is shutting down. */
  | { kind: 'cancelled'; failure: UpstreamFailure }
  /** Our own code threw while reading: not the provider's fault. */
  | { kind: 'local'; error: unknown };

export interface UpstreamStreamControl {
  /** The attempt's signal: its abort reason tells a stall or timeout (the upstream's) from a cancel (ours). */
  signal: CancelState;
  /** Ends the upstream request. */
  abort(reason: AbortReason): void;
  /** Runs once when the stream is done with (read to its end, or closed): releases the attempt's timers. */
  onClose?(): void;
  /**
   * From now on the caller going away does not end the upstream request (a shutdown while the caller
   * is there still does, and the idle budget bounds every wait): a finished answer's trailing usage
   * is still read.
   */
  outliveCaller?(): void;
  /** Where a committed stream's outcome is reported (`reportEnd`). */
  health?: { registry: HealthRegistry; key: string; attemptStartedAt: number };
  /** Cuts an upstream that writes far past its completion limit (output-budget.ts); absent: never cut. */
  output?: OutputBudget | null;
}

export class UpstreamStream {
  private closed = false;
  /** The events of the last upstream read not taken yet (a STOP can come mid-read). */
  private pending: readonly StreamEvent[] = [];
  private taken = 0;
  /** When the first content event arrived (set at the commit point). */
  firstContentAt = 0;
  /** Whether each choice seen so far (by index) has finished. */
  private readonly finished = new Map<number, boolean>();
  /** The answer is complete and its last word on usage came: the next `read` ends at once. */
  private answered = false;
  /** The output passed its budget's cut point: the next turn of `loop` ends the answer. */
  private overrun = false;
  /** Some choice has finished (from then on each chunk is checked against `finished`). */
  private anyFinished = false;

  private constructor(
    /** One batch per upstream read: the events of a body chunk cost one await, not one each. */
    private readonly events: EventBatches,
    private readonly control: UpstreamStreamControl,
    /** Whose stream it is, for `closesAnswer`; null: read to its end. */
    private readonly kind: ProviderKind | null,
  ) {}

  /** A stream read from an upstream SSE body. */
  static fromBody(options: StreamReaderOptions, control: UpstreamStreamControl): UpstreamStream {
    return new UpstreamStream(new BodyEvents(options), control, options.adapter.kind);
  }

  /** Events already in hand (an upstream that answered a stream request whole). */
  static fromEvents(events: readonly StreamEvent[], control: UpstreamStreamControl): UpstreamStream {
    let given = false;
    return new UpstreamStream(
      {
        next: () => {
          if (given) return Promise.resolve(END);
          given = true;
          return Promise.resolve({ done: false, value: events });
        },
        return: () => undefined,
      },
      control,
      null,
    );
  }

  /**
   * Reads events, giving each chunk to `onChunk`, until the stream ends or `onChunk` answers STOP
   * (then the stream stays open for the next `read`). Any other end closes it. Errors thrown by
   * `onChunk` are the consumer's: they close the stream and propagate.
   */
  async read(onChunk: ChunkHandler, onMalformed?: (reason: string) => void): Promise<StreamEnd> {
    let end: StreamEnd;
    try {
      end = await this.loop(onChunk, onMalformed);
    } catch (error) {
      this.close();
      throw error;
    }
    if (end.kind !== 'stopped') this.close();
    return end;
  }

  private async loop(onChunk: ChunkHandler, onMalformed?: (reason: string) => void): Promise<StreamEnd> {
    for (;;) {
      if (this.answered) return { kind: 'done' };
      if (this.overrun) return this.cut(onChunk);
      if (this.taken === this.pending.length) {
        let next: IteratorResult<readonly StreamEvent[]>;
        try {
          next = await this.events.next();
        } catch (error) {
          return this.classify(error);
        }
        if (next.done) return { kind: 'eof' };
        this.pending = next.value;
        this.taken = 0;
        continue;
      }
      let event = this.pending[this.taken++]!;
      switch (event.kind) {
        case 'chunk': {
          if (this.anyFinished) {
            // A choice that finished says nothing more: a second finish ("stop", then "length") or
            // text after it would contradict what the caller was told (the fold keeps the last).
            const rest = afterFinish(event, this.finished);
            if (rest === null) break;
            event = rest;
          }
          // A provider that ends its answer with an error (finish_reason "error") did not answer: a
          // failure like an error event (failover before the first byte, in-band error after it),
          // never a finished answer.
          const failure = finishedWithError(event);
          if (failure !== null) return { kind: 'broken', failure, cause: 'event' };
          this.note(event);
          if (this.control.output?.add(event) === true) this.overrun = true;
          // Awaited only when the handler has to wait (a caller reading slowly): an await per event
          // is a microtask hop per token otherwise.
          const answer = onChunk(event);
          if (answer === STOP || (answer !== undefined && (await answer) === STOP)) return { kind: 'stopped' };
          break;
        }
        case 'done':
          return { kind: 'done' };
        case 'error':
          return { kind: 'broken', failure: event.failure, cause: 'event' };
        case 'malformed':
          // An event we cannot read may have carried any part of the answer (a word, a tool call's
          // arguments): skipping it could serve a different answer as a whole one ("The answer is NOT
          // 42" without "NOT "). The stream is broken — failover before the first byte, in-band error
          // after it; once every choice finished, the answer stands (its consumers keep it).
          onMalformed?.(event.reason);
          return { kind: 'broken', failure: invalidResponse(event.reason), cause: 'malformed' };
        case 'ignore':
        case 'keepalive':
          break;
      }
    }
  }

  /**
   * Ends an answer whose upstream wrote far past its completion limit as one that kept to it ends: each
   * open choice gets `finish_reason: "length"`, and the upstream request is ended (not drained: it
   * would write on). Its usage never comes; the charge is our estimate, at most the limit.
   */
  private async cut(onChunk: ChunkHandler): Promise<StreamEnd> {
    this.overrun = false;
    this.answered = true;
    this.control.abort('shutdown');
    const open: ChunkEvent['choices'] = [];
    for (const [index, done] of this.finished)
      if (!done) open.push({ index, delta: {}, finish_reason: 'length', native_finish_reason: null });
    if (open.length > 0) {
      const finish: ChunkEvent = {
        kind: 'chunk',
        upstreamId: null,
        choices: open,
        usage: null,
        systemFingerprint: null,
      };
      this.note(finish);
      const answer = onChunk(finish);
      if (answer === STOP || (answer !== undefined && (await answer) === STOP)) return { kind: 'stopped' };
    }
    return { kind: 'done' };
  }

  /** Tracks which choices finished, and whether this chunk is the finished answer's last word on usage. */
  private note(event: ChunkEvent): void {
    for (const choice of event.choices)
      if (choice.finish_reason !== null) {
        this.finished.set(choice.index, true);
        this.anyFinished = true;
      } else if (!this.finished.has(choice.index)) this.finished.set(choice.index, false);
    if (this.kind === null || !closesAnswer(event, this.kind) || this.finished.size === 0) return;
    for (const done of this.finished.values()) if (!done) return;
    this.answered = true;
  }

  private classify(error: unknown): StreamEnd {
    const signal = this.control.signal;
    const reason = abortReasonOf(signal);
    if (reason === 'client_closed' || reason === 'shutdown')
      return { kind: 'cancelled', failure: failureFromThrown(error, signal) };
    if (isTransportError(error, signal))
      return { kind: 'broken', failure: failureFromThrown(error, signal), cause: 'transport' };
    return { kind: 'local', error };
  }

  /** Ends the upstream request (its body reads fail from then on). */
  abort(reason: AbortReason): void {
    this.control.abort(reason);
  }

  /** See `UpstreamStreamControl.outliveCaller`. */
  outliveCaller(): void {
    this.control.outliveCaller?.();
  }

  /** Done with it: what is left of the body is drained (the connection goes back to the pool) or dropped. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.events.return();
    this.control.onClose?.();
  }

  /**
   * A committed stream's outcome, for its endpoint's health: the upstream's fault, or its time to
   * first token and (when the answer completed) its throughput.
   */
  reportEnd(outcome: {
    fault: FailureType | null;
    incomplete: boolean;
    finishedAt: number;
    completionTokens: number | null;
  }): void {
    const health = this.control.health;
    if (!health) return;
    if (outcome.fault) {
      health.registry.recordFailure(health.key, outcome.finishedAt, outcome.fault, null);
      return;
    }
    const seconds = (outcome.finishedAt - this.firstContentAt) / 1000;
    const throughput =
      !outcome.incomplete && outcome.completionTokens !== null && seconds > 0
        ? outcome.completionTokens / seconds
        : null;
    health.registry.recordSuccess(
      health.key,
      outcome.finishedAt,
      this.firstContentAt - health.attemptStartedAt,
      throughput,
    );
  }
}

export interface StreamReaderOptions {
  body: AsyncIterable<Uint8Array>;
  adapter: ProviderAdapter;
  /** The request body the adapter built the upstream request from (`ProviderAdapter.openStream`). */
  request?: Record<string, unknown>;
  /** Called with the idle budget before each wait on the upstream; returns a disarm function. */
  armIdle: () => () => void;
}

/** The upstream's events, one batch per body read (a batch may be empty: an event split across reads). */
interface EventBatches {
  next(): Promise<IteratorResult<readonly StreamEvent[], void>>;
  /** Done with it before its end: what is left of the body is drained (or dropped). */
  return(): void;
}

const END: IteratorResult<readonly StreamEvent[], void> = { done: true, value: undefined };
const NO_EVENTS: readonly StreamEvent[] = [];

/**
 * An SSE body read one chunk at a time: each read is one promise (the body's), parsed in its `then`;
 * no async generator in between (those cost three or four microtask hops per read, and a streamed
 * token is one read).
 */
class BodyEvents implements EventBatches {
  private readonly parser = new SseParser();
  private readonly decoder: Pick<ProviderAdapter, 'parseStreamEvent'>;
  private readonly iterator: AsyncIterator<Uint8Array>;
  /** The body ended (or broke the SSE limits): nothing more to read. */
  private finished = false;
  /** The read in flight, if any: `return()` drains only after it settled (the body has one reader). */
  private reading: Promise<unknown> | null = null;
  /** The idle budget armed for the reads since the last one that brought (part of) an event. */
  private disarm: (() => void) | null = null;
  /** Reads that brought only a piece of the event in progress since the last whole one. */
  private pieces = 0;

  constructor(private readonly options: StreamReaderOptions) {
    this.decoder = options.adapter.openStream?.(options.request) ?? options.adapter;
    this.iterator = options.body[Symbol.asyncIterator]();
  }

  next(): Promise<IteratorResult<readonly StreamEvent[], void>> {
    if (this.finished) return Promise.resolve(END);
    // A read that brought nothing but keep-alives (comment lines, pings, blank events) and no part of
    // another event leaves the budget running from where it was: silence is counted between events,
    // so an upstream that sends keep-alives and nothing else is given up on like a silent one.
    this.disarm ??= this.options.armIdle();
    const read = this.iterator.next().then(
      (next) => {
        this.reading = null;
        let progressed = true;
        try {
          const parsed = this.parse(next);
          if (parsed.done === true || parsed.value.some(isProgress)) this.pieces = 0;
          // A piece of an event re-arms the budget too (a large event may span reads), a few times:
          // an upstream writing one byte a second of a line it never ends is given up on.
          else progressed = this.parser.midEvent && ++this.pieces <= MAX_PIECES_PER_EVENT;
          return parsed;
        } finally {
          if (progressed) this.disarmIdle();
        }
      },
      (error: unknown) => {
        this.reading = null;
        this.disarmIdle();
        throw error;
      },
    );
    this.reading = read;
    return read;
  }

  private disarmIdle(): void {
    const disarm = this.disarm;
    this.disarm = null;
    disarm?.();
  }

  private parse(next: IteratorResult<Uint8Array>): IteratorResult<readonly StreamEvent[], void> {
    let events;
    try {
      events = next.done ? this.parser.end() : this.parser.push(next.value);
    } catch (error) {
      if (!(error instanceof SseLimitError)) throw error;
      // An invalid response like any other: fails over before the first byte, in-band error after.
      this.finished = true;
      return { done: false, value: [{ kind: 'error', failure: oversized(error) }] };
    }
    if (next.done) this.finished = true;
    if (events.length === 0) return next.done ? END : { done: false, value: NO_EVENTS };
    const decoder = this.decoder;
    return { done: false, value: events.map((event) => decodeEvent(decoder, event.data, event.event)) };
  }

  /**
   * The consumer stopped early (after [DONE], or on an error): read what is left so the keep-alive
   * connection returns to the pool, or destroy the body when the upstream does not end promptly.
   */
  return(): void {
    if (this.finished) return;
    this.finished = true;
    const iterator = this.iterator;
    if (this.reading === null) void drain(iterator);
    else
      this.reading.then(
        () => drain(iterator),
        () => drain(iterator),
      );
  }
}

/**
 * One event through the provider's decoder — unless its JSON nests deeper than any answer does: it
 * would parse, and then overflow the stack of whatever walks it next (an adapter re-serialising
 * tool arguments, the relay writing the chunk). Such an event is malformed, like any other.
 */
function decodeEvent(
  decoder: Pick<ProviderAdapter, 'parseStreamEvent'>,
  data: string,
  event: string | null,
): StreamEvent {
  if (nestsTooDeeply(data)) return { kind: 'malformed', reason: 'stream event JSON is nested too deeply' };
  return decoder.parseStreamEvent(data, event);
}

/** The chunk without the choices that already finished; null when nothing is left (no choice, no usage). */
function afterFinish(event: ChunkEvent, finished: ReadonlyMap<number, boolean>): ChunkEvent | null {
  let open = 0;
  for (const choice of event.choices) if (finished.get(choice.index) !== true) open++;
  if (open === event.choices.length) return event;
  if (open === 0 && event.usage === null) return null;
  return {
    kind: 'chunk',
    upstreamId: event.upstreamId,
    choices: event.choices.filter((choice) => finished.get(choice.index) !== true),
    usage: event.usage,
    systemFingerprint: event.systemFingerprint,
  };
}

function finishedWithError(event: ChunkEvent): UpstreamFailure | null {
  for (const choice of event.choices) if (isProviderError(choice)) return endedWithError();
  return null;
}

/**
 * The provider's own `finish_reason: "error"` (an OpenAI-compatible server, or OpenRouter in front of
 * one), or vLLM's `abort` (its engine aborted the request: shutdown, pause, scale-down). Reasons we
 * map to "error" from another native value (Gemini's MALFORMED_FUNCTION_CALL or LANGUAGE, an
 * unreadable reason) come from the request or the model, not a failing provider: the answer is served
 * as it ended, as before — failing over would bill every endpoint for one caller's request and count
 * against their health.
 */
export function isProviderError(choice: {
  finish_reason: string | null;
  native_finish_reason: string | null;
}): boolean {
  if (choice.finish_reason !== 'error') return false;
  const native = choice.native_finish_reason;
  return native === null || native === 'error' || native.toLowerCase() === 'abort';
}

/** An answer the provider ended with `finish_reason: "error"`: a server failure. */
export function endedWithError(): UpstreamFailure {
  return {
    type: 'server',
    status: null,
    message: 'The provider ended the answer with an error',
    providerCode: null,
    retryAfterMs: null,
    raw: null,
    ours: true,
  };
}

/**
 * Whether an event moves the answer on: not a keep-alive, and not a chunk that carries nothing of the
 * answer — no text or other delta field, finish or logprobs (a usage count alone is not: Gemini repeats
 * it on every event). An upstream sending empty deltas forever after its first token is as silent as
 * one sending comments, and is given up on after `idle_ms`.
 */
export function isProgress(event: StreamEvent): boolean {
  if (event.kind === 'keepalive') return false;
  if (event.kind !== 'chunk') return true;
  for (const choice of event.choices)
    if (choice.finish_reason !== null || choice.logprobs !== undefined || carriesSomething(choice.delta)) return true;
  return false;
}

function carriesSomething(delta: Readonly<Record<string, unknown>>): boolean {
  for (const name in delta) {
    if (name === 'role') continue;
    const value = delta[name];
    if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    return true;
  }
  return false;
}

function oversized(error: SseLimitError): UpstreamFailure {
  return {
    type: 'invalid_response',
    status: null,
    message: `Invalid response from provider: ${error.message}`,
    providerCode: null,
    retryAfterMs: null,
    raw: null,
  };
}

const DRAIN_LIMIT_BYTES = 64 * 1024;
/** How long the rest of a body may take to arrive, all of it: a body that trickles on is dropped. */
const DRAIN_WAIT_MS = 1000;

/**
 * Reads what is left of a body so its keep-alive connection can be reused: up to DRAIN_LIMIT_BYTES
 * within DRAIN_WAIT_MS overall; past either, the request is aborted (`return()` settles a waiting read).
 */
async function drain(iterator: AsyncIterator<Uint8Array>): Promise<void> {
  const timer = setTimeout(() => void iterator.return?.(), DRAIN_WAIT_MS);
  let bytes = 0;
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      bytes += next.value.byteLength;
      if (bytes > DRAIN_LIMIT_BYTES) {
        await iterator.return?.();
        return;
      }
    }
  } catch {
    // Aborted or reset: nothing left to release.
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether this chunk, in an answer whose every choice has finished, is the provider's last word on
 * usage — after it nothing the answer needs is left, so `read` ends (`done`) rather than wait for
 * `[DONE]` or the end of the body. Anthropic and Gemini report the whole usage once, with the finish (a
 * prompt-only usage from earlier in their streams is not whole). An OpenAI-compatible upstream asked
 * for `include_usage` sends the request-wide usage in a chunk of its own, without choices, last;
 * usage on earlier chunks (vLLM's continuous usage, Perplexity) is running, not final.
 */
function closesAnswer(event: ChunkEvent, kind: ProviderKind): boolean {
  if (!isFinalUsage(event.usage)) return false;
  return kind === 'anthropic' || kind === 'gemini' || event.choices.length === 0;
}

/** Content the caller can see: text, reasoning, a tool call, a refusal or a finish reason. Role-only deltas are not. */
export function carriesContent(event: StreamEvent): boolean {
  if (event.kind !== 'chunk') return false;
  return event.choices.some((choice) => {
    if (choice.finish_reason !== null) return true;
    const delta = choice.delta;
    const text = (value: unknown) => typeof value === 'string' && value.length > 0;
    return text(delta.content) || text(delta.reasoning) || text(delta.refusal) || Array.isArray(delta.tool_calls);
  });
}
