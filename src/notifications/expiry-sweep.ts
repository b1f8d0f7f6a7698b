/**
 * Keys expiring within `days` are announced to their holders by a periodic sweep (every process runs
 * it; the dedupe key `key_expiry:<key>:<expires_at>` keeps it to one message per key and expiry date,
 * whichever process queues it first).
 */
import type { MailOutbox } from '../mail/mail-outbox.js';
import { keyExpiryMail } from '../mail/templates.js';
import type { Logger } from '../observability/logger.js';
import type { Store } from '../store/types.js';

const DAY_MS = 86_400_000;

export interface ExpirySweepDeps {
  store: Store;
  mail: MailOutbox;
  now(): number;
  log: Logger;
  days: number;
  intervalMs: number;
}

export class ExpirySweep {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(private readonly deps: ExpirySweepDeps) {}

  start(): void {
    const tick = () => {
      this.running = this.runOnce()
        .catch((error: unknown) => {
          this.deps.log.warn({ err: error }, 'key expiry sweep failed; retrying at the next interval');
          return 0;
        })
        .finally(() => (this.running = null));
      this.timer = setTimeout(tick, this.deps.intervalMs);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Queues the notices due now; returns how many were new. */
  async runOnce(): Promise<number> {
    const { store, mail } = this.deps;
    const now = this.deps.now();
    const expiring = await store.notifications.expiringKeys(now, now + this.deps.days * DAY_MS);
    if (expiring.length === 0) return 0;
    return mail.enqueue(
      expiring.map((key) =>
        mail.compose(
          keyExpiryMail({ key, expiresAt: new Date(key.expiresAt).toISOString(), dashboard: mail.dashboardUrl }),
          {
            kind: 'key_expiry',
            recipient: key.email,
            accountId: key.accountId,
            dedupeKey: `key_expiry:${key.hash}:${key.expiresAt}`,
          },
        ),
      ),
    );
  }
}
