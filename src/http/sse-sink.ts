/**
 * StreamSink over a raw Node response: headers go out lazily (first event or first keep-alive), so
 * that failures before anything was written still get a real HTTP status. Writes respect
 * backpressure: a slow reader slows the upstream read, nothing is buffered without bound.
 */
import type { ServerResponse } from 'node:http';
import type { TollgateError } from '../core/errors.js';
import type { ResponseIdentity } from '../pipeline/completion-shapes.js';
import { renderErrorChunk } from '../pipeline/completion-shapes.js';
import type { StreamSink } from '../pipeline/stream-relay.js';
import { SSE_DONE, SSE_PROCESSING_COMMENT, formatSseData } from '../streaming/sse-writer.js';
import { renderError } from './error-table.js';

export class SseSink implements StreamSink {
  private headersSent = false;
  private lastWriteAt = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
    private readonly now: () => number,
  ) {}

  get started(): boolean {
    return this.headersSent;
  }

  get closed(): boolean {
    return this.res.destroyed || (this.res.writableEnded && !this.res.writableFinished) || this.res.socket?.destroyed === true;
  }

  private open(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.res.writeHead(200, {
      ...this.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.res.flushHeaders();
  }

  private async send(text: string): Promise<void> {
    if (this.closed) return;
    this.open();
    this.lastWriteAt = this.now();
    if (!this.res.write(text)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.res.off('drain', done);
          this.res.off('close', done);
          resolve();
        };
        this.res.on('drain', done);
        this.res.on('close', done);
      });
    }
  }

  keepAlive(intervalMs: number): () => void {
    this.lastWriteAt = this.now();
    const timer = setInterval(() => {
      if (this.closed) return;
      if (this.now() - this.lastWriteAt >= intervalMs - 5) void this.send(SSE_PROCESSING_COMMENT);
    }, Math.max(50, Math.floor(intervalMs / 2)));
    timer.unref();
    return () => clearInterval(timer);
  }

  write(payload: unknown): Promise<void> {
    return this.send(formatSseData(payload));
  }

  async error(error: TollgateError, identity: ResponseIdentity): Promise<void> {
    const rendered = renderError(error);
    const metadata = (rendered.body.error.metadata ?? {}) as { error_type?: unknown; provider_code?: unknown };
    const errorType = typeof metadata.error_type === 'string' ? metadata.error_type : 'server';
    const chunk = renderErrorChunk(identity, rendered.status, rendered.body.error.message, {
      error_type: errorType,
      // Upstreams give numeric codes too; @openrouter/sdk accepts only a string here.
      ...(metadata.provider_code !== undefined && metadata.provider_code !== null ? { provider_code: String(metadata.provider_code) } : {}),
    });
    await this.send(formatSseData(chunk));
    await this.done();
  }

  async done(): Promise<void> {
    await this.send(SSE_DONE);
    if (!this.res.writableEnded) this.res.end();
  }
}
