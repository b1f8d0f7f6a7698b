/**
 * `HealthChannel` over Redis pub/sub (routing/fleet-health.ts). Publishing uses the shared fail-fast
 * connection and drops the message while Redis is away (each process then keeps its own view);
 * subscribing needs a connection of its own, which ioredis re-subscribes after every reconnect.
 */
import { Redis } from 'ioredis';
import type { HealthChannel } from '../routing/fleet-health.js';

export interface RedisHealthChannelOptions {
  /** Shared fail-fast connection for PUBLISH. */
  publisher: Redis;
  /** Where the subscriber connects. */
  url: string;
  channel: string;
}

export class RedisHealthChannel implements HealthChannel {
  private subscriber: Redis | null = null;

  constructor(private readonly options: RedisHealthChannelOptions) {}

  publish(message: string): void {
    if (this.options.publisher.status !== 'ready') return;
    this.options.publisher.publish(this.options.channel, message).catch(() => undefined);
  }

  subscribe(onMessage: (message: string) => void): void {
    const subscriber = new Redis(this.options.url, {
      maxRetriesPerRequest: null,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    });
    subscriber.on('error', () => undefined); // outages are reported by the fleet heartbeat
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.options.channel) onMessage(message);
    });
    subscriber.subscribe(this.options.channel).catch(() => undefined);
    this.subscriber = subscriber;
  }

  async close(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = null;
    if (!subscriber) return;
    if (subscriber.status === 'ready') await subscriber.quit().catch(() => subscriber.disconnect());
    else subscriber.disconnect();
  }
}
