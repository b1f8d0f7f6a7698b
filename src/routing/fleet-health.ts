/**
 * Endpoint health shared by the fleet (docs/architecture.md, "Fleet-wide endpoint health"): what one
 * process learns about an endpoint — its breaker tripped or closed again, the upstream asked for a
 * pause, outcomes for uptime — is published on a channel every process listens to, so a provider
 * failing on one process is avoided by all within a round trip. Breaker and cooling events go out at
 * once (batched per event-loop turn); outcome counts are summed and sent once a second.
 *
 * The channel is best effort: while it is down each process keeps its own view (the fallback), and
 * nothing here ever waits for it. Events from other processes are applied without being echoed.
 */
import { randomBytes } from 'node:crypto';
import { MAX_COOLING_MS, type HealthListener, type HealthRegistry, type RemoteHealth } from './health.js';

/** A publish/subscribe channel (Redis pub/sub in main.ts). */
export interface HealthChannel {
  publish(message: string): void;
  subscribe(onMessage: (message: string) => void): void;
  close(): Promise<void>;
}

export interface FleetHealthOptions {
  health: HealthRegistry;
  channel: HealthChannel;
  now: () => number;
  /**
   * Endpoint keys shared with the fleet: the catalog's endpoints. Anything else (a BYOK credential's
   * own health, an endpoint this process does not know) is neither sent nor applied.
   */
  knows: (key: string) => boolean;
  /** Longest pause accepted from another process (default 10 min). */
  maxPauseMs?: number;
  /** How often outcome counts are sent (default 1000 ms). */
  outcomeEveryMs?: number;
}

interface Message {
  /** The sender, so a process ignores its own messages. */
  from: string;
  events: RemoteHealth[];
}

export class FleetHealth implements HealthListener {
  private readonly id = randomBytes(8).toString('hex');
  private readonly pending: RemoteHealth[] = [];
  private readonly outcomes = new Map<string, { ok: number; failed: number }>();
  private flushScheduled = false;
  private readonly timer: NodeJS.Timeout;
  private readonly maxPauseMs: number;

  constructor(private readonly options: FleetHealthOptions) {
    this.maxPauseMs = options.maxPauseMs ?? MAX_COOLING_MS;
    options.channel.subscribe((message) => this.receive(message));
    options.health.listen(this);
    this.timer = setInterval(() => this.sendOutcomes(), options.outcomeEveryMs ?? 1_000);
    this.timer.unref();
  }

  opened(key: string, ms: number): void {
    this.queue({ type: 'opened', key, ms });
  }

  closed(key: string): void {
    this.queue({ type: 'closed', key });
  }

  cooling(key: string, ms: number): void {
    this.queue({ type: 'cooling', key, ms });
  }

  outcome(key: string, ok: boolean): void {
    if (!this.options.knows(key)) return;
    let counts = this.outcomes.get(key);
    if (!counts) {
      counts = { ok: 0, failed: 0 };
      this.outcomes.set(key, counts);
    }
    if (ok) counts.ok++;
    else counts.failed++;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.options.health.listen(null);
    await this.options.channel.close();
  }

  private queue(event: RemoteHealth): void {
    if (!this.options.knows(event.key)) return;
    this.pending.push(event);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.send(this.pending.splice(0));
    });
  }

  private sendOutcomes(): void {
    if (this.outcomes.size === 0) return;
    const events: RemoteHealth[] = [...this.outcomes].map(([key, c]) => ({
      type: 'outcomes',
      key,
      ok: c.ok,
      failed: c.failed,
    }));
    this.outcomes.clear();
    this.send(events);
  }

  private send(events: RemoteHealth[]): void {
    if (events.length === 0) return;
    const message: Message = { from: this.id, events };
    this.options.channel.publish(JSON.stringify(message));
  }

  private receive(raw: string): void {
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      return;
    }
    if (!isMessage(message) || message.from === this.id) return;
    const now = this.options.now();
    for (const event of message.events) {
      const valid = parseEvent(event, this.maxPauseMs);
      if (valid && this.options.knows(valid.key)) this.options.health.applyRemote(valid, now);
    }
  }
}

function isMessage(value: unknown): value is { from: string; events: unknown[] } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Message).from === 'string' &&
    Array.isArray((value as Message).events)
  );
}

const count = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** Only well-formed events with bounded figures are applied. */
function parseEvent(value: unknown, maxPauseMs: number): RemoteHealth | null {
  if (typeof value !== 'object' || value === null) return null;
  const e = value as Record<string, unknown>;
  if (typeof e.key !== 'string') return null;
  if ((e.type === 'opened' || e.type === 'cooling') && count(e.ms))
    return { type: e.type, key: e.key, ms: Math.min(e.ms, maxPauseMs) };
  if (e.type === 'closed') return { type: 'closed', key: e.key };
  if (e.type === 'outcomes' && count(e.ok) && count(e.failed))
    return { type: 'outcomes', key: e.key, ok: e.ok, failed: e.failed };
  return null;
}
