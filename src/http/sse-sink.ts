/**
 * StreamSink over a raw Node response: headers go out lazily (first event or first keep-alive), so
 * that failures before anything was written still get a real HTTP status. Writes respect
 * backpressure: a slow reader slows the upstream read, nothing is buffered without bound. A caller
 * that stops reading altogether must not pin the upstream forever: when the socket has not drained
 * within `drainTimeoutMs`, the response is destroyed, so the relay sees the caller gone (it aborts
 * the upstream and charges what was produced).
 *
 * Events written in one turn of the event loop (those of one upstream read) go out in one
 * `res.write`, on the next tick: each `res.write` of a chunked response costs its own chunk framing
 * and writable-stream bookkeeping (~2 µs), and an upstream read often carries several events. A
 * write past FLUSH_AT characters goes out at once, so a producer that never yields cannot pile text up.
 */
import type { ServerResponse } from 'node:http';
import type { ErrorType, TollgateError } from '../core/errors.js';
import type { ResponseIdentity } from '../pipeline/completion-shapes.js';
import { renderErrorChunk } from '../pipeline/completion-shapes.js';
import type { Charge } from '../pipeline/generation.js';
import type { StreamSink } from '../pipeline/stream-relay.js';
import { SSE_DONE, SSE_PROCESSING_COMMENT, formatSseData, formatSseJson } from '../streaming/sse-writer.js';
import { renderError } from './error-table.js';

export interface SseSinkOptions {
  /** How long a write may wait for the socket to drain before the caller counts as gone; default 60 s. */
  drainTimeoutMs?: number;
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;

/** Pending text beyond this many characters is written at once rather than on the next tick. */
const FLUSH_AT = 16 * 1024;

const DONE: Promise<void> = Promise.resolve();

export class SseSink implements StreamSink {
  private headersSent = false;
  private lastWriteAt = 0;
  private readonly drainTimeoutMs: number;
  /** The pending wait for 'drain', shared by every write made meanwhile (one timer, one listener pair). */
  private drained: Promise<void> | null = null;
  /** Text written this turn of the event loop and not handed to the response yet. */
  private pending: string | null = null;
  /** done() ran: nothing more is written (a write after `end()` would be an error on the next tick). */
  private ended = false;
  private readonly flushOnTick = () => this.flush();

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
    private readonly now: () => number,
    options: SseSinkOptions = {},
  ) {
    this.drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  get started(): boolean {
    return this.headersSent;
  }

  get closed(): boolean {
    return (
      this.res.destroyed ||
      (this.res.writableEnded && !this.res.writableFinished) ||
      this.res.socket?.destroyed === true
    );
  }

  private open(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.res.writeHead(
      200,
      Object.assign({}, this.headers, {
        'content-type': 'text/event-stream; charset=utf-8',
        // no-store, as every authenticated answer (docs/api.md): a caching proxy must not keep an answer.
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      }),
    );
  }

  /**
   * Queues `text` for this turn's write. Null unless the response is waiting for 'drain' (a write
   * that filled the socket's buffers): then a promise of when it drained, or the caller was dropped.
   */
  private send(text: string): Promise<void> | null {
    if (this.closed || this.ended) return null;
    this.open();
    this.lastWriteAt = this.now();
    if (this.pending === null) {
      this.pending = text;
      process.nextTick(this.flushOnTick);
    } else {
      this.pending += text;
    }
    if (this.pending.length >= FLUSH_AT) this.flush();
    return this.drained;
  }

  /** Hands the pending text to the response; past its buffer, later writes wait for 'drain'. */
  private flush(): void {
    const text = this.pending;
    if (text === null) return;
    this.pending = null;
    if (this.closed) return;
    if (!this.res.write(text)) void this.waitForDrain();
  }

  private waitForDrain(): Promise<void> {
    this.drained ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.res.off('drain', done);
        this.res.off('close', done);
        this.drained = null;
        resolve();
      };
      // The caller stopped reading: drop the connection, so the relay sees it gone.
      const timer = setTimeout(() => {
        if (!this.res.destroyed) this.res.destroy();
        done();
      }, this.drainTimeoutMs);
      this.res.on('drain', done);
      this.res.on('close', done);
    });
    return this.drained;
  }

  keepAlive(intervalMs: number): () => void {
    this.lastWriteAt = this.now();
    const timer = setInterval(
      () => {
        // A write waiting for 'drain' is not idleness: no comments pile up behind it.
        if (this.closed || this.drained) return;
        if (this.now() - this.lastWriteAt >= intervalMs - 5) void this.send(SSE_PROCESSING_COMMENT);
      },
      Math.max(50, Math.floor(intervalMs / 2)),
    );
    timer.unref();
    return () => clearInterval(timer);
  }

  write(payload: unknown): Promise<void> {
    return this.send(formatSseData(payload)) ?? DONE;
  }

  writeJson(json: string): Promise<void> | null {
    return this.send(formatSseJson(json));
  }

  async error(error: TollgateError, identity: ResponseIdentity, charge: Charge | null = null): Promise<void> {
    const rendered = renderError(error);
    const metadata = (rendered.body.error.metadata ?? {}) as { error_type?: ErrorType; provider_code?: unknown };
    const errorType: ErrorType = metadata.error_type ?? 'server';
    const chunk = renderErrorChunk(
      identity,
      rendered.status,
      rendered.body.error.message,
      {
        error_type: errorType,
        // Upstreams give numeric codes too; @openrouter/sdk accepts only a string here.
        ...(metadata.provider_code !== undefined && metadata.provider_code !== null
          ? { provider_code: String(metadata.provider_code) }
          : {}),
      },
      charge,
    );
    await this.send(formatSseData(chunk));
    await this.done();
  }

  async done(): Promise<void> {
    if (this.ended) return;
    void this.send(SSE_DONE);
    this.ended = true;
    this.flush(); // before end(): nothing may follow it
    // A caller that stopped reading is dropped after the drain timeout, as for any write.
    if (this.drained) await this.drained;
    if (!this.res.writableEnded) this.res.end();
  }
}
