/**
 * The background sender: claims due messages from the outbox one at a time (a lease, so several
 * senders — in one process or many — never take the same message), sends each, and marks it sent, or
 * schedules a retry with exponential backoff, or gives it up after `maxAttempts`. It polls, and is
 * woken at once when this process queues a message. State lives in the outbox table only, so a restart
 * resumes where the last process stopped.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../observability/logger.js';
import type { MailKind, OutboxStore } from '../store/mail-types.js';
import type { MailMetrics } from './mail-metrics.js';
import {
  describeSendFailure,
  isConnectionFailure,
  isPermanentSendFailure,
  type MailTransport,
} from './smtp-transport.js';

export interface OutboxSenderOptions {
  store: OutboxStore;
  transport: MailTransport;
  metrics: MailMetrics;
  log: Logger;
  now(): number;
  pollMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  maxAttempts: number;
  /** How long a claimed message is ours; must exceed one send (timeouts included). */
  leaseMs: number;
  random?: () => number;
  /** Kinds whose content goes stale (a reset link's token expires): not sent, given up, after this age. */
  expiresAfterMs?: Partial<Record<MailKind, number>>;
}

/** Backoff before attempt `attempts + 1`: base · 2^(attempts−1), capped, ±20 % jitter so senders spread out. */
export function retryDelay(
  attempts: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(attempts - 1, 40)));
  return Math.round(exponential * (0.8 + 0.4 * random()));
}

const STOP_WAIT_MS = 10_000;

export class OutboxSender {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(private readonly options: OutboxSenderOptions) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Runs a pass now (or right after the current one). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.pass().finally(() => {
      this.running = null;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.wake();
      } else {
        this.timer = setTimeout(() => this.wake(), this.options.pollMs);
        this.timer.unref();
      }
    });
  }

  /** Stops polling; waits (bounded) for a send in progress. An unfinished one is taken over when its lease expires. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) {
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([this.running, new Promise<void>((resolve) => (timeout = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(timeout);
    }
    this.options.transport.close();
  }

  /** Sends every due message; stops early when the server is unreachable (the rest would fail alike). */
  private async pass(): Promise<void> {
    const o = this.options;
    try {
      while (!this.stopped) {
        const now = o.now();
        const entry = await o.store.claim(this.owner, now, now + o.leaseMs);
        if (!entry) return;
        const ttl = o.expiresAfterMs?.[entry.kind];
        if (ttl !== undefined && now - entry.createdAt >= ttl) {
          await o.store.markFailed(entry.id, this.owner, now, 'expired before it could be sent');
          o.metrics.failed.inc({ outcome: 'given_up' });
          o.log.warn({ mail: entry.id, kind: entry.kind }, 'mail expired before it could be sent; given up');
          continue;
        }
        try {
          await o.transport.send(entry);
        } catch (error) {
          const reason = describeSendFailure(error);
          const fields = { mail: entry.id, kind: entry.kind, attempts: entry.attempts, reason };
          if (isPermanentSendFailure(error) || entry.attempts >= o.maxAttempts) {
            await o.store.markFailed(entry.id, this.owner, o.now(), reason);
            o.metrics.failed.inc({ outcome: 'given_up' });
            o.log.error(fields, 'mail given up');
          } else {
            const delay = retryDelay(entry.attempts, o.retryBaseMs, o.retryMaxMs, o.random);
            await o.store.markRetry(entry.id, this.owner, o.now() + delay, reason);
            o.metrics.failed.inc({ outcome: 'retry' });
            o.log.warn({ ...fields, retry_in_ms: delay }, 'mail send failed; will retry');
          }
          if (isConnectionFailure(error)) return;
          continue;
        }
        // Sent: a crash before this mark means one resend (same Message-ID) after the lease expires.
        const marked = await o.store.markSent(entry.id, this.owner, o.now());
        o.metrics.sent.inc({ kind: entry.kind });
        if (!marked)
          o.log.warn({ mail: entry.id }, 'mail sent after its lease expired; another sender may send it again');
      }
    } catch (error) {
      o.log.warn({ err: error }, 'outbox pass failed (store unreachable?); retrying at the next poll');
    }
  }
}
