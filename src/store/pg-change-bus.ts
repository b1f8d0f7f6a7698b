/**
 * Cache invalidation across gateway processes sharing PostgreSQL: LISTEN/NOTIFY on one channel.
 * A lost connection is re-established; while it is down, caches fall back on their TTLs.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { CHANGE_TOPICS, type ChangeBus, type ChangeHandler, type ChangeTopic } from '../core/change-bus.js';

const CHANNEL = 'tollgate_changes';

export class PgChangeBus implements ChangeBus {
  private client: pg.Client | null = null;
  private readonly handlers: ChangeHandler[] = [];
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly url: string,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  static async connect(url: string, log: Pick<Logger, 'warn'>): Promise<PgChangeBus> {
    const bus = new PgChangeBus(url, log);
    await bus.open();
    return bus;
  }

  /** Like `connect`, but never fails: a database down at boot is retried in the background (caches fall back on their TTLs). */
  static connectInBackground(url: string, log: Pick<Logger, 'warn'>): PgChangeBus {
    const bus = new PgChangeBus(url, log);
    bus.open().catch((error: unknown) => {
      log.warn({ err: error }, 'change bus cannot connect yet; retrying');
      bus.scheduleReconnect();
    });
    return bus;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      const at = message.payload.indexOf(':');
      const topic = message.payload.slice(0, at);
      const known = CHANGE_TOPICS.find((t) => t === topic);
      if (known) this.deliver(known, message.payload.slice(at + 1));
    });
    client.on('error', (error) => {
      this.log.warn({ err: error }, 'change bus connection lost; reconnecting');
      this.scheduleReconnect();
    });
    client.on('end', () => this.scheduleReconnect());
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.client = null;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.open().catch(() => this.scheduleReconnect());
    }, 1000);
    this.reconnectTimer.unref();
  }

  private deliver(topic: ChangeTopic, id: string): void {
    for (const handler of this.handlers) handler(topic, id);
  }

  async publish(topic: ChangeTopic, id: string): Promise<void> {
    // Deliver locally at once (this process must not wait for the round trip), then tell the others.
    this.deliver(topic, id);
    if (this.client) await this.client.query('SELECT pg_notify($1, $2)', [CHANNEL, `${topic}:${id}`]).catch(() => undefined);
  }

  subscribe(handler: ChangeHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
