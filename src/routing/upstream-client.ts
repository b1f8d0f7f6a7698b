/**
 * The one place that talks HTTP to upstream providers (undici keep-alive pools; providers set to
 * `http2: true` through routing/http2-upstream.ts, behind the same dispatcher API). Each attempt gets
 * its own Cancellation; timeouts, the caller's disconnect and shutdown all abort through it, and
 * the reason is kept so the failure is classified as a timeout or a cancellation, not a crash.
 */
import { CUT } from '../providers/http-error.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { SecureClientSessionOptions } from 'node:http2';
import { Agent, errors, type Dispatcher } from 'undici';
import { Http2Upstreams } from './http2-upstream.js';
import type { Cancellation, CancelState } from '../core/cancellation.js';
import type { UpstreamRequest } from '../providers/types.js';

export type AbortReason = 'connect_timeout' | 'first_token_timeout' | 'idle_timeout' | 'client_closed' | 'shutdown';

export class AttemptAbort extends Error {
  constructor(readonly reason: AbortReason) {
    super(`attempt aborted: ${reason}`);
    this.name = 'AttemptAbort';
  }
}

export interface UpstreamAgentOptions {
  /**
   * Speak HTTP/2 only (`providers[].http2`): h2c with prior knowledge to an `http:` URL, h2 by ALPN to
   * an `https:` one, several requests per connection (`routing/http2-upstream.ts`).
   */
  http2?: boolean;
  /** TLS options for `https:` upstreams (tests pass their own CA). */
  tls?: SecureClientSessionOptions;
}

export function createUpstreamAgent(options: UpstreamAgentOptions = {}): Dispatcher {
  if (options.http2) return new Http2Upstreams(options.tls ? { tls: options.tls } : {});
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 300_000,
    connections: null,
    pipelining: 1,
    // Per-attempt timers below are the real budgets; these only stop undici's own defaults from cutting in first.
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: 30_000, ...options.tls },
  });
}

/** One connection pool per provider, speaking what the provider is configured for (`providers[].http2`). */
export class UpstreamAgents {
  private readonly agents = new Map<string, Dispatcher>();
  private readonly fallback: Dispatcher;

  constructor(providers: Iterable<{ id: string; http2: boolean }>) {
    for (const provider of providers) this.agents.set(provider.id, createUpstreamAgent({ http2: provider.http2 }));
    // For ids outside the catalog: the moderation endpoint (`@moderation`).
    this.fallback = createUpstreamAgent();
  }

  readonly dispatcherFor = (providerId: string): Dispatcher => this.agents.get(providerId) ?? this.fallback;

  async close(): Promise<void> {
    await Promise.all([...this.agents.values(), this.fallback].map((agent) => agent.close()));
  }
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

/** An upstream URL's origin and path, parsed once per distinct URL (one per endpoint, in practice). */
const targets = new Map<string, { origin: string; path: string }>();
const MAX_TARGETS = 1024;

function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new TypeError(`upstream URL must be http or https: ${parsed.protocol}`);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/**
 * Sends the request and resolves when response headers arrived (or rejects with the abort reason,
 * or undici's error). Straight to the dispatcher with a handler of our own: undici's `request()`
 * parses the URL and copies the options with a spread-first literal (a hidden class of its own per
 * call on Node 20), and hands the body over as a Node Readable — a push, a `readable` tick and a
 * promise of its async iterator per chunk, where a stream's chunk is one token. Here each chunk goes
 * from undici's parser to the one reader that waits for it.
 */
export function sendUpstream(
  dispatcher: Dispatcher,
  upstream: UpstreamRequest,
  signal: Cancellation,
): Promise<UpstreamResponse> {
  let target: { origin: string; path: string };
  try {
    target = targetOf(upstream.url);
  } catch (error) {
    return Promise.reject(error);
  }
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<UpstreamResponse>((resolve, reject) => {
    const exchange = new UpstreamExchange(signal, resolve, reject);
    try {
      dispatcher.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers: upstream.headers, body: upstream.body },
        exchange,
      );
    } catch (error) {
      // undici's dispatchers report failures through the handler; any other that throws is handled alike.
      exchange.onResponseError(null, error instanceof Error ? error : new Error(String(error)));
    }
  });
}

/** Past this many bytes read from the socket and not taken by the reader, undici stops reading it. */
const HIGH_WATER_MARK = 64 * 1024;

/** One upstream request, as undici's dispatcher drives it (a DispatchHandler). */
class UpstreamExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private body: UpstreamBody | null = null;
  private settled = false;
  private completed = false;
  private readonly onAbort = () => {
    const reason = abortError(this.signal);
    // undici is done with a completed request (its abort is a no-op then): what was not read yet is
    // dropped and the next read fails with the reason, as a destroyed Readable's would.
    if (this.completed) this.body?.fail(reason);
    else this.abort(reason);
  };

  constructor(
    private readonly signal: Cancellation,
    private readonly resolve: (response: UpstreamResponse) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    // Until the request fails, or for good once it completed (an abort still cuts what is unread);
    // abort() drops its listeners itself, and the Cancellation is the attempt's own.
    if (!signal.aborted) signal.addEventListener('abort', this.onAbort);
  }

  private abort(reason: Error): void {
    if (this.controller !== null) {
      this.controller.abort(reason);
      return;
    }
    // Not started yet (queued for a connection, or still connecting): the caller gets the reason now,
    // and onRequestStart aborts the request if undici ever starts it.
    if (!this.settled) {
      this.settled = true;
      this.reject(reason);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(abortError(this.signal));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx: the real answer follows
    this.body = new UpstreamBody(controller);
    this.settled = true;
    this.resolve({ status: statusCode, headers, body: this.body });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.completed = true;
    if (this.body === null) {
      // Ended without a response: a failure (a broken connection), never a request left hanging.
      this.onResponseError(null, new errors.SocketError('the upstream request ended without a response'));
      return;
    }
    this.body.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.signal.removeEventListener('abort', this.onAbort);
    if (!this.settled) {
      this.settled = true;
      this.reject(error);
      return;
    }
    this.body?.fail(error);
  }
}

/** What an abort through the attempt's Cancellation rejects with: its reason, as undici's request() does. */
function abortError(signal: CancelState): Error {
  return signal.reason instanceof Error ? signal.reason : new errors.RequestAbortedError();
}

/**
 * An upstream response body, read by one consumer with `for await` or `next()`: chunks queue as
 * undici parses them; past HIGH_WATER_MARK unread bytes the socket is paused until the reader
 * catches up. A transport failure or an abort rejects the read that waits (or the next one) with
 * undici's error or the abort reason. `return()` before the end (a `for await` left early, a
 * reader done with the stream) aborts the request, as destroying undici's Readable does, so the
 * connection is not reused with a half-read answer on it.
 */
export class UpstreamBody implements AsyncIterableIterator<Uint8Array> {
  private chunks: Buffer[] = [];
  private taken = 0;
  private queued = 0;
  private ended = false;
  private failure: Error | null = null;
  private closed = false;
  private waiting: {
    resolve: (result: IteratorResult<Uint8Array>) => void;
    reject: (error: unknown) => void;
  } | null = null;

  constructor(private readonly controller: Dispatcher.DispatchController) {}

  /** Bytes received and not read yet (bounded by the high-water mark, give or take a chunk). */
  get buffered(): number {
    return this.queued;
  }

  /** @internal A chunk from undici's parser. */
  push(chunk: Buffer): void {
    if (this.closed || this.failure !== null) return; // a chunk parsed after an abort is not wanted
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      waiting.resolve({ done: false, value: chunk });
      return;
    }
    this.chunks.push(chunk);
    this.queued += chunk.byteLength;
    if (this.queued > HIGH_WATER_MARK) this.controller.pause();
  }

  /** @internal The body ended. */
  end(): void {
    this.ended = true;
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      waiting.resolve({ done: true, value: undefined });
    }
  }

  /** @internal The request failed or was aborted after its headers (or, complete, before it was all read). */
  fail(error: Error): void {
    // Nothing to fail once the reader is done with it, or when all of a complete body was read.
    if (this.closed || this.failure !== null || (this.ended && this.taken === this.chunks.length)) return;
    this.failure = error;
    // What was read and not taken goes with it, as with a destroyed Readable: the next read fails.
    this.chunks = [];
    this.taken = 0;
    this.queued = 0;
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      waiting.reject(error);
    }
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.taken < this.chunks.length) {
      const chunk = this.chunks[this.taken]!;
      this.chunks[this.taken++] = EMPTY;
      if (this.taken === this.chunks.length) {
        this.chunks = [];
        this.taken = 0;
      }
      this.queued -= chunk.byteLength;
      if (this.controller.paused && this.queued <= HIGH_WATER_MARK) this.controller.resume();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended || this.closed) return Promise.resolve({ done: true, value: undefined });
    if (this.waiting !== null) return Promise.reject(new Error('an upstream body has one reader at a time'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<Uint8Array>> {
    if (!this.closed) {
      this.closed = true;
      this.chunks = [];
      this.taken = 0;
      this.queued = 0;
      if (!this.ended && this.failure === null) this.controller.abort(new errors.RequestAbortedError());
      const waiting = this.waiting;
      if (waiting !== null) {
        this.waiting = null;
        waiting.resolve({ done: true, value: undefined });
      }
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

const EMPTY = Buffer.alloc(0);

export function abortReasonOf(signal: CancelState): AbortReason | null {
  const reason: unknown = signal.reason;
  return reason instanceof AttemptAbort ? reason.reason : null;
}

/**
 * Reads an error body for classification, bounded so a hostile upstream cannot make us buffer
 * megabytes. A body cut at the bound ends in `…`, so the secret scrubber also removes a key cut in two
 * at its end (secret-scrubber.ts).
 */
export async function readBounded(body: AsyncIterable<Uint8Array>, maxBytes = 64 * 1024): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.byteLength > maxBytes) {
      parts.push(chunk.subarray(0, maxBytes - size));
      return `${Buffer.concat(parts).toString('utf8')}${CUT}`;
    }
    parts.push(chunk);
    size += chunk.byteLength;
  }
  return Buffer.concat(parts).toString('utf8');
}
