/** Prometheus metrics of the outbox, registered on the app's registry (see observability/metrics.ts). */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { OutboxStore } from '../store/mail-types.js';

export interface MailMetrics {
  queued: Counter<'kind'>;
  sent: Counter<'kind'>;
  failed: Counter<'outcome'>;
}

export function registerMailMetrics(registry: Registry, outbox: OutboxStore, now: () => number): MailMetrics {
  const queued = new Counter({
    name: 'tollgate_mail_queued_total',
    help: 'Messages queued in the outbox by this process, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const sent = new Counter({
    name: 'tollgate_mail_sent_total',
    help: 'Messages sent by this process, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const failed = new Counter({
    name: 'tollgate_mail_failed_total',
    help: 'Failed sends by this process (retry: tried again later; given_up: max attempts or a permanent refusal)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Read from the store when scraped: the outbox is shared by every process.
  let last: Promise<{ undelivered: number; oldestUndeliveredAt: number | null }> | null = null;
  const stats = () => (last ??= outbox.stats().finally(() => setTimeout(() => (last = null), 500).unref()));
  new Gauge({
    name: 'tollgate_mail_undelivered',
    help: 'Messages in the outbox waiting to be sent (all processes)',
    registers: [registry],
    async collect() {
      this.set((await stats().catch(() => ({ undelivered: 0 }))).undelivered);
    },
  });
  new Gauge({
    name: 'tollgate_mail_oldest_undelivered_age_seconds',
    help: 'Age of the oldest message waiting to be sent (0 when none)',
    registers: [registry],
    async collect() {
      const oldest = (await stats().catch(() => ({ oldestUndeliveredAt: null }))).oldestUndeliveredAt;
      this.set(oldest === null ? 0 : Math.max(0, (now() - oldest) / 1000));
    },
  });
  return { queued, sent, failed };
}
