/**
 * The one way the product sends mail: compose a message (rendered now, with a fixed Message-ID) and
 * queue it in the outbox — on its own, or through a store method that writes it in the transaction of
 * the state change causing it (`composeOnly`, then `noteQueued`). A sender (`outbox-sender.ts`)
 * delivers it later.
 */
import { randomUUID } from 'node:crypto';
import type { MailKind, OutboxMessage, OutboxStore } from '../store/mail-types.js';
import type { MailMetrics } from './mail-metrics.js';
import type { RenderedMail } from './templates.js';

export interface ComposeOptions {
  kind: MailKind;
  recipient: string;
  accountId: string | null;
  /** At most one message per dedupe key, ever ("once per window"). */
  dedupeKey: string | null;
}

/** The domain of the `from` address, for Message-IDs. */
export function senderDomain(from: string): string {
  const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
  return address.slice(address.lastIndexOf('@') + 1).trim() || 'tollgate.invalid';
}

export class MailOutbox {
  private readonly listeners: Array<() => void> = [];
  private readonly domain: string;

  constructor(
    private readonly store: OutboxStore,
    private readonly metrics: MailMetrics,
    private readonly now: () => number,
    from: string,
    /** `mail.public_url`: the dashboard notices point to (null: they name its pages without a link). */
    readonly dashboardUrl: string | null = null,
  ) {
    this.domain = senderDomain(from);
  }

  compose(rendered: RenderedMail, options: ComposeOptions): OutboxMessage {
    const id = `mail_${randomUUID().replaceAll('-', '')}`;
    return {
      id,
      kind: options.kind,
      dedupeKey: options.dedupeKey,
      accountId: options.accountId,
      recipient: options.recipient,
      subject: rendered.subject,
      text: rendered.text,
      html: rendered.html,
      messageId: `<${id}@${this.domain}>`,
      createdAt: this.now(),
    };
  }

  /** Queues messages on their own (no other state change). Returns how many were new. */
  async enqueue(messages: readonly OutboxMessage[]): Promise<number> {
    const queued = await this.store.enqueue(messages);
    if (queued > 0) this.noteQueued(messages, queued);
    return queued;
  }

  /** After a transaction queued messages: counts them and wakes this process's sender. */
  noteQueued(messages: readonly Pick<OutboxMessage, 'kind'>[], queued: number): void {
    if (queued <= 0) return;
    const kind = messages[0]?.kind ?? 'unknown';
    this.metrics.queued.inc({ kind }, queued);
    for (const listener of this.listeners) listener();
  }

  onQueued(listener: () => void): void {
    this.listeners.push(listener);
  }
}
