/**
 * HTTP/2 to upstream providers (`providers[].http2`), on node:http2 sessions rather than undici's h2
 * client: undici 7 (the line that runs on Node 20) fails every in-flight stream of a connection that
 * receives a graceful GOAWAY — which servers send routinely (nginx's `keepalive_requests`, reloads,
 * connection-age limits) — and, after one, closes each new pool on the old one's second `disconnect`
 * event, opening a connection per batch of requests from then on (both fixed only in undici 8, which
 * needs Node 22). It also ignores the server's SETTINGS_MAX_CONCURRENT_STREAMS and idle timeouts.
 *
 * Here: per origin, sessions that carry up to min(HTTP2_STREAMS_PER_CONNECTION, the server's limit)
 * streams each; requests wait in one queue until a session with a free slot has the server's
 * SETTINGS, and a burst opens one session per that many waiting requests. A GOAWAY stops new streams
 * on its session while the ones it covers finish; a stream the server refused (REFUSED_STREAM, or
 * beyond a GOAWAY's last stream id: never processed, RFC 9113 §8.7) is sent again, a bounded number of
 * times, on another session. A session idle for `idleMs` is closed; a request given up while its
 * stream is open PINGs its session, ended when no acknowledgement comes within `pingTimeoutMs`. A
 * stream's end counts only after its response headers and without a reset code (Node also ends the
 * readable side of a stream whose connection was lost). Hop-by-hop headers, forbidden in
 * HTTP/2, are left out. `https:` origins negotiate h2 by ALPN only: a server that chose HTTP/1.1
 * fails the connection (Http2NotNegotiated).
 *
 * It is an undici Dispatcher for `sendUpstream`'s handler style (onRequestStart … onResponseError,
 * with a controller that pauses, resumes and aborts one stream); nothing else dispatches on it.
 */
import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders as Http2Headers,
  type OutgoingHttpHeaders,
  type SecureClientSessionOptions,
} from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Dispatcher, errors } from 'undici';

/** Streams one connection carries at most, whatever the server allows (RFC 9113 §6.5.2 asks servers to allow at least 100). */
export const HTTP2_STREAMS_PER_CONNECTION = 100;
/** Times a request the server refused unprocessed is sent again before it fails. */
const MAX_REFUSED_RETRIES = 3;
const CONNECT_TIMEOUT_MS = 30_000;
/** Sessions one origin may have open at once (100 streams each: far past any real load). */
const MAX_SESSIONS_PER_ORIGIN = 1_000;

export interface Http2UpstreamOptions {
  /** TLS options for `https:` origins (tests pass their own CA). */
  tls?: SecureClientSessionOptions;
  /** A session with no stream for this long is closed (default 30 s, as the HTTP/1.1 agents' keep-alive). */
  idleMs?: number;
  /** How long a liveness PING may go unanswered before the connection counts as dead (default 5 s). */
  pingTimeoutMs?: number;
}

/** An upstream configured for HTTP/2 whose TLS handshake chose HTTP/1.1 (or nothing) by ALPN. */
export class Http2NotNegotiated extends Error {
  readonly code = 'ERR_HTTP2_NOT_NEGOTIATED';
  constructor(host: string, cause?: Error) {
    super(
      `${host} did not negotiate HTTP/2 by ALPN (the provider is configured with http2: true)`,
      cause ? { cause } : undefined,
    );
    this.name = 'Http2NotNegotiated';
  }
}

/** Connection-specific headers HTTP/2 forbids (RFC 9113 §8.2.2); `host` travels as `:authority`. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
]);

export class Http2Upstreams extends Dispatcher {
  private readonly origins = new Map<string, Http2Origin>();
  private closing = false;

  constructor(private readonly options: Http2UpstreamOptions = {}) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = String(options.origin);
    const request = new Http2Request(options, handler);
    if (this.closing) {
      request.fail(new errors.ClientClosedError());
      return true;
    }
    let pool = this.origins.get(origin);
    if (pool === undefined) {
      pool = new Http2Origin(origin, this.options);
      this.origins.set(origin, pool);
    }
    pool.enqueue(request);
    return true;
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    this.closing = true;
    const closed = Promise.all([...this.origins.values()].map((pool) => pool.close())).then(() => undefined);
    if (callback === undefined) return closed;
    void closed.then(callback, callback);
  }

  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(errOrCallback?: Error | null | (() => void), callback?: () => void): Promise<void> | void {
    this.closing = true;
    const error = typeof errOrCallback === 'function' ? null : (errOrCallback ?? null);
    const done = typeof errOrCallback === 'function' ? errOrCallback : callback;
    const destroyed = Promise.all([...this.origins.values()].map((pool) => pool.destroy(error))).then(() => undefined);
    if (done === undefined) return destroyed;
    void destroyed.then(done, done);
  }
}

/** The sessions of one origin and the requests waiting for a stream. */
class Http2Origin {
  /** Sessions that take new streams (connecting, or up and not going away). */
  private readonly sessions = new Set<Http2Connection>();
  /** Every session not closed yet, draining ones included (what close() and destroy() wait for). */
  private readonly live = new Set<Http2Connection>();
  private readonly queue: Http2Request[] = [];
  private closing = false;

  constructor(
    private readonly origin: string,
    private readonly options: Http2UpstreamOptions,
  ) {}

  enqueue(request: Http2Request, front = false): void {
    if (request.done) return; // aborted as it was handed over
    if (this.closing) {
      request.fail(new errors.ClientClosedError());
      return;
    }
    request.waitIn(this);
    if (front) this.queue.unshift(request);
    else this.queue.push(request);
    this.pump();
  }

  /** A waiting request was aborted. */
  forget(request: Http2Request): void {
    const index = this.queue.indexOf(request);
    if (index !== -1) this.queue.splice(index, 1);
  }

  /** Starts what can start, and opens sessions for the rest. */
  pump(): void {
    while (this.queue.length > 0) {
      let ready: Http2Connection | null = null;
      for (const connection of this.sessions)
        if (connection.canStart()) {
          ready = connection;
          break;
        }
      if (ready === null) break;
      ready.start(this.queue.shift()!);
    }
    if (this.queue.length === 0 || this.closing) return;
    // Sessions still connecting will take their share of what waits; open more only for the rest.
    let expected = 0;
    for (const connection of this.sessions) expected += connection.pendingCapacity();
    while (expected < this.queue.length && this.live.size < MAX_SESSIONS_PER_ORIGIN) {
      const connection = new Http2Connection(this.origin, this.options, this);
      this.sessions.add(connection);
      this.live.add(connection);
      expected += connection.pendingCapacity();
    }
  }

  /**
   * A session takes no new stream any more (failed, closing, going away, or the server allows it
   * none). `error` when it never came up, or came up allowing no stream: the requests waiting for it
   * fail rather than wait for a session that is not coming (the attempt's failover decides what next).
   */
  removed(connection: Http2Connection, error: Error | null): void {
    this.sessions.delete(connection);
    if (error !== null) {
      const waiting = this.queue.splice(0, Math.min(this.queue.length, HTTP2_STREAMS_PER_CONNECTION));
      for (const request of waiting) request.fail(error);
    }
    this.pump();
  }

  /** A session's connection closed. */
  closed(connection: Http2Connection): void {
    this.live.delete(connection);
    this.pump();
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const request of this.queue.splice(0)) request.fail(new errors.ClientClosedError());
    await Promise.all([...this.live].map((connection) => connection.close()));
  }

  async destroy(error: Error | null): Promise<void> {
    this.closing = true;
    const reason = error ?? new errors.ClientDestroyedError();
    for (const request of this.queue.splice(0)) request.fail(reason);
    await Promise.all([...this.live].map((connection) => connection.destroy(reason)));
  }
}

/** One HTTP/2 session (one TCP or TLS connection). */
class Http2Connection {
  private readonly session: ClientHttp2Session;
  /** The server's SETTINGS arrived: streams may start, up to `limit`. */
  private settled = false;
  private draining = false;
  private closed = false;
  private left = false;
  private limit = HTTP2_STREAMS_PER_CONNECTION;
  private readonly active = new Set<Http2Request>();
  private idleTimer: NodeJS.Timeout | null = null;
  private connectTimer: NodeJS.Timeout | null;
  /** A liveness PING is out (sent when a started request was given up on). */
  private pinging = false;
  /** The GOAWAY received, if any: streams up to its last id may have been processed. */
  private goaway: { code: number; lastStreamId: number } | null = null;

  constructor(
    origin: string,
    private readonly options: Http2UpstreamOptions,
    private readonly pool: Http2Origin,
  ) {
    const url = new URL(origin);
    this.session = connect(origin, {
      ...options.tls,
      // Prior knowledge for http: (h2c); h2 only, by ALPN, for https:.
      ...(url.protocol === 'https:' ? { ALPNProtocols: ['h2'] } : {}),
      peerMaxConcurrentStreams: HTTP2_STREAMS_PER_CONNECTION,
    });
    this.connectTimer = setTimeout(
      () => this.fail(Object.assign(new Error('HTTP/2 connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })),
      CONNECT_TIMEOUT_MS,
    );
    this.connectTimer.unref();
    const session = this.session;
    session.once('connect', () => {
      const socket = session.socket as TLSSocket | undefined;
      if (url.protocol === 'https:' && socket?.alpnProtocol !== 'h2') this.fail(new Http2NotNegotiated(url.hostname));
    });
    session.on('remoteSettings', (settings) => {
      const first = !this.settled;
      this.limit = Math.min(
        HTTP2_STREAMS_PER_CONNECTION,
        settings.maxConcurrentStreams ?? HTTP2_STREAMS_PER_CONNECTION,
      );
      this.settled = true;
      if (this.connectTimer) clearTimeout(this.connectTimer);
      this.connectTimer = null;
      if (this.limit === 0) {
        // A server that takes no stream now: not a place to wait (nghttp2 would park the streams).
        if (first)
          this.leave(
            Object.assign(new Error('the provider allows no HTTP/2 stream'), { code: 'ERR_HTTP2_NO_STREAMS' }),
          );
        if (this.active.size === 0) void this.close();
        return;
      }
      if (this.active.size === 0) this.idle();
      this.pool.pump();
    });
    // Streams it covers finish; new ones go elsewhere. Node closes the session once they are done.
    session.on('goaway', (code: number, lastStreamId: number) => {
      this.goaway = { code, lastStreamId };
      this.drain();
    });
    session.on('error', (error: Error & { code?: unknown }) =>
      this.fail(
        error.code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL'
          ? new Http2NotNegotiated(url.hostname, error)
          : error,
      ),
    );
    // Closed before the server's SETTINGS: whatever is there does not speak HTTP/2 (an HTTP/1.1
    // server answers the connection preface with a 400 and hangs up).
    session.on('close', () => {
      this.fail(
        this.settled
          ? null
          : Object.assign(new Error('the connection closed before the server spoke HTTP/2'), {
              code: 'ERR_HTTP2_SESSION_ERROR',
            }),
      );
      this.pool.closed(this);
    });
  }

  canStart(): boolean {
    return (
      this.settled &&
      !this.draining &&
      !this.closed &&
      !this.session.closed &&
      !this.session.destroyed &&
      this.active.size < this.limit
    );
  }

  /** Streams this session can still take once it is up (0 when up or going away). */
  pendingCapacity(): number {
    if (this.draining || this.closed) return 0;
    return this.settled ? 0 : this.limit;
  }

  start(request: Http2Request): void {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    this.active.add(request);
    this.session.ref();
    request.startOn(this.session, {
      ended: (refused) => {
        this.active.delete(request);
        if (refused && request.refusals < MAX_REFUSED_RETRIES) {
          // Never processed by the server: safe to send again (RFC 9113 §8.7).
          this.pool.enqueue(request, true);
        } else if (refused) {
          request.fail(
            Object.assign(new Error('the provider refused the HTTP/2 stream'), { code: 'ERR_HTTP2_STREAM_REFUSED' }),
          );
        }
        this.streamEnded();
      },
      processedMaybe: (streamId) =>
        this.goaway !== null && this.goaway.code !== constants.NGHTTP2_NO_ERROR && streamId <= this.goaway.lastStreamId,
      givenUp: () => this.checkAlive(),
    });
  }

  /**
   * A started request was given up on (its timer fired, or its caller left): if the connection
   * itself went silent, every later stream on it would hang too. A PING not answered in time ends
   * the session, and what is still on it fails over.
   */
  private checkAlive(): void {
    if (this.pinging || this.closed || this.session.closed || this.session.destroyed) return;
    this.pinging = true;
    const timer = setTimeout(
      () =>
        this.fail(
          Object.assign(new Error('the HTTP/2 connection stopped answering (no PING acknowledgement)'), {
            code: 'ERR_HTTP2_PING_TIMEOUT',
          }),
        ),
      this.options.pingTimeoutMs ?? 5_000,
    );
    timer.unref();
    let sent = false;
    try {
      sent = this.session.ping((error) => {
        clearTimeout(timer);
        this.pinging = false;
        if (error !== null && !this.closed) this.fail(error);
      });
    } catch {
      // The session is going away already.
    }
    if (!sent) {
      clearTimeout(timer);
      this.pinging = false;
    }
  }

  private streamEnded(): void {
    if (this.draining || this.closed) return;
    if (this.active.size === 0) this.idle();
    this.pool.pump(); // a slot is free
  }

  /** No stream on it: closed after `idleMs` unless one starts, and it no longer keeps the process alive. */
  private idle(): void {
    this.session.unref();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.close(), this.options.idleMs ?? 30_000);
    this.idleTimer.unref();
  }

  /** Leaves the pool once: no new stream starts here. */
  private leave(error: Error | null): void {
    if (this.left) return;
    this.left = true;
    this.pool.removed(this, error);
  }

  private drain(): void {
    this.draining = true;
    this.leave(null);
  }

  private fail(error: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    if (this.connectTimer) clearTimeout(this.connectTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (error !== null && !this.session.destroyed) this.session.destroy(error);
    // Streams still open fail through their own 'close' events.
    this.leave(this.settled && this.limit > 0 ? null : error);
  }

  close(): Promise<void> {
    this.drain();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.session.closed || this.session.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.session.close(resolve));
  }

  destroy(error: Error): Promise<void> {
    this.drain();
    if (this.session.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.session.once('close', resolve);
      this.session.destroy(error);
    });
  }
}

interface StreamHooks {
  /** Once, when the stream is done with; `refused`: the server refused it unprocessed. */
  ended(refused: boolean): void;
  /** The server may have processed this stream (a GOAWAY with an error code covered it): no resend. */
  processedMaybe(streamId: number): boolean;
  /** The request was aborted while its stream was open. */
  givenUp(): void;
}

/** One request, and the controller its handler pauses, resumes and aborts it with. */
class Http2Request implements Dispatcher.DispatchController {
  private stream: ClientHttp2Stream | null = null;
  private hooks: StreamHooks | null = null;
  private waitingIn: Http2Origin | null = null;
  private finished = false;
  private responded = false;
  private isPaused = false;
  private abortReason: Error | null = null;
  refusals = 0;

  constructor(
    private readonly options: Dispatcher.DispatchOptions,
    private readonly handler: Dispatcher.DispatchHandler,
  ) {
    handler.onRequestStart?.(this, {});
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }

  get paused(): boolean {
    return this.isPaused;
  }

  get reason(): Error | null {
    return this.abortReason;
  }

  get done(): boolean {
    return this.finished;
  }

  abort(reason: Error): void {
    if (this.finished || this.abortReason !== null) return;
    this.abortReason = reason;
    this.waitingIn?.forget(this);
    this.waitingIn = null;
    const stream = this.stream;
    const hooks = this.hooks;
    this.fail(reason);
    if (stream !== null && hooks !== null) {
      // Resets this stream only; the session goes on. Its slot is free now: a stream nghttp2 has
      // not sent yet may never emit 'close'.
      if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      this.release(false);
      hooks.givenUp();
    }
  }

  pause(): void {
    this.isPaused = true;
    this.stream?.pause();
  }

  resume(): void {
    this.isPaused = false;
    this.stream?.resume();
  }

  waitIn(origin: Http2Origin): void {
    this.waitingIn = origin;
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.waitingIn?.forget(this);
    this.waitingIn = null;
    this.handler.onResponseError?.(this, error);
  }

  /** Hands the stream's slot back, once per start. */
  private release(refused: boolean): void {
    const hooks = this.hooks;
    if (hooks === null) return;
    this.hooks = null;
    this.stream = null;
    hooks.ended(refused);
  }

  /** Sends the request on `session`. */
  startOn(session: ClientHttp2Session, hooks: StreamHooks): void {
    this.waitingIn = null;
    this.hooks = hooks;
    if (this.finished) {
      this.release(false);
      return;
    }
    const headers: OutgoingHttpHeaders = {
      ':method': this.options.method,
      ':path': this.options.path,
    };
    for (const [name, value] of headerEntries(this.options.headers)) {
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || (lower === 'te' && String(value).toLowerCase() !== 'trailers')) continue;
      headers[lower] = value;
    }
    const body = this.options.body;
    let stream: ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: body === undefined || body === null });
    } catch (error) {
      // A header Node refuses, or a session that went away this very tick: this request's failure.
      this.release(false);
      this.fail(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.stream = stream;
    if (this.isPaused) stream.pause();
    stream.on('response', (responseHeaders: Http2Headers) => {
      if (this.finished) return;
      this.responded = true;
      const status = Number(responseHeaders[':status']);
      const plain: IncomingHttpHeaders = {};
      for (const name of Object.keys(responseHeaders))
        if (name.charCodeAt(0) !== 58 /* ':' */) plain[name] = responseHeaders[name];
      this.handler.onResponseStart?.(this, status, plain, '');
    });
    stream.on('data', (chunk: Buffer) => {
      if (!this.finished) this.handler.onResponseData?.(this, chunk);
    });
    stream.on('end', () => {
      // Node also ends the readable side when the connection is lost or the stream is reset: only an
      // END_STREAM after the response headers, with no reset code, is the end of the answer; the
      // rest fails on 'close'.
      if (this.finished || !this.responded || (stream.rstCode ?? 0) !== 0) return;
      this.finished = true;
      this.handler.onResponseEnd?.(this, {});
    });
    stream.on('error', () => undefined); // reported on 'close', with the stream's reset code
    stream.on('close', () => {
      if (this.stream !== stream) return; // aborted: the slot was handed back then
      const refused =
        !this.responded &&
        !this.finished &&
        stream.rstCode === constants.NGHTTP2_REFUSED_STREAM &&
        !(stream.id !== undefined && this.hooks?.processedMaybe(stream.id));
      if (refused) {
        this.refusals++;
        this.release(true);
        return;
      }
      this.release(false);
      if (!this.finished)
        this.fail(
          Object.assign(new Error(`HTTP/2 stream closed before the response ended (code ${stream.rstCode})`), {
            code: 'ERR_HTTP2_STREAM_ERROR',
          }),
        );
    });
    if (body !== undefined && body !== null) stream.end(body as string | Buffer);
  }
}

function headerEntries(headers: Dispatcher.DispatchOptions['headers']): [string, string | string[]][] {
  if (headers === undefined || headers === null) return [];
  if (Array.isArray(headers)) {
    const entries: [string, string][] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) entries.push([String(headers[i]), String(headers[i + 1])]);
    return entries;
  }
  const entries: [string, string | string[]][] = [];
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>))
    if (value !== undefined) entries.push([name, value]);
  return entries;
}
