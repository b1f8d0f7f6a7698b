/**
 * Cache invalidation across gateway processes sharing PostgreSQL: LISTEN/NOTIFY on one channel.
 * A lost connection is re-established; NOTIFY is not queued for a listener that is gone, so on every
 * (re)connect every subscriber is told that anything may have changed (`ALL_IDS`) and flushes its
 * cache: a key disabled while this process was not listening is refused right after reconnection,
 * not when its cache entry expires. Publishing is retried, through a short-lived connection when the
 * listening one is down.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { ALL_IDS, CHANGE_TOPICS, type ChangeBus, type ChangeHandler, type ChangeTopic } from '../core/change-bus.js';

const CHANNEL = 'tollgate_changes';
/** Retries of one NOTIFY after the first try, with doubling waits from 100 ms (~3 s in all). */
const PUBLISH_RETRIES = 5;

export interface PgChangeBusOptions {
  /** Wait before reconnecting a lost listener (default 1000 ms). */
  reconnectDelayMs?: number;
}

export class PgChangeBus implements ChangeBus {
  private client: pg.Client | null = null;
  private readonly handlers: ChangeHandler[] = [];
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private connects = 0;

  private constructor(
    private readonly url: string,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly reconnectDelayMs: number,
  ) {}

  static async connect(url: string, log: Pick<Logger, 'warn'>, options: PgChangeBusOptions = {}): Promise<PgChangeBus> {
    const bus = new PgChangeBus(url, log, options.reconnectDelayMs ?? 1000);
    await bus.open();
    return bus;
  }

  /** Whether the listening connection is up. */
  get connected(): boolean {
    return this.client !== null;
  }

  /** Successful (re)connections of the listener so far. */
  get connections(): number {
    return this.connects;
  }

  /** Like `connect`, but never fails: a database down at boot is retried in the background (caches fall back on their TTLs). */
  static connectInBackground(url: string, log: Pick<Logger, 'warn'>, options: PgChangeBusOptions = {}): PgChangeBus {
    const bus = new PgChangeBus(url, log, options.reconnectDelayMs ?? 1000);
    bus.open().catch((error: unknown) => {
      log.warn({ err: error }, 'change bus cannot connect yet; retrying');
      bus.scheduleReconnect();
    });
    return bus;
  }

  private async open(): Promise<void> {
    // keepAlive: a connection dropped without a FIN (NAT, failover) is noticed instead of hanging forever.
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      const at = message.payload.indexOf(':');
      const topic = message.payload.slice(0, at);
      const known = CHANGE_TOPICS.find((t) => t === topic);
      if (known) this.deliver(known, message.payload.slice(at + 1));
    });
    const lost = (error?: Error) => {
      if (this.client !== client) return; // not (or no longer) the listener
      this.client = null;
      this.log.warn(error ? { err: error } : {}, 'change bus connection lost; reconnecting');
      void client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connects++;
    // Whatever was published while nobody listened here is lost: every subscriber forgets everything.
    for (const topic of CHANGE_TOPICS) this.deliver(topic, ALL_IDS);
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    // The timer stays set while `open` runs, so a late event of an old connection cannot start a second one.
    this.reconnectTimer = setTimeout(() => {
      this.open().then(
        () => {
          this.reconnectTimer = null;
        },
        () => {
          this.reconnectTimer = null;
          this.scheduleReconnect();
        },
      );
    }, this.reconnectDelayMs);
    this.reconnectTimer.unref();
  }

  private deliver(topic: ChangeTopic, id: string): void {
    for (const handler of this.handlers) handler(topic, id);
  }

  async publish(topic: ChangeTopic, id: string): Promise<void> {
    // Deliver locally at once (this process must not wait for the round trip), then tell the others.
    this.deliver(topic, id);
    const payload = `${topic}:${id}`;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.notify(payload);
        return;
      } catch (error) {
        if (this.closed) return;
        if (attempt >= PUBLISH_RETRIES) {
          // The change is committed; other processes see it when their cache entries expire or their listener reconnects.
          this.log.warn({ err: error, topic }, 'could not publish a change to other gateway processes');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }

  private async notify(payload: string): Promise<void> {
    const listener = this.client;
    if (listener) {
      await listener.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
      return;
    }
    // The listening connection is down: tell the others through a short-lived one.
    const once = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 2000 });
    once.on('error', () => undefined);
    try {
      await once.connect();
      await once.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
    } finally {
      await once.end().catch(() => undefined);
    }
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
