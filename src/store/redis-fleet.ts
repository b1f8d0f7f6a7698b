/**
 * `FleetView` over Redis (docs/architecture.md, "Redis outages"): a heartbeat script, once a second,
 * that keeps this process in the fleet's lease set, counts the live processes, and reads Redis's
 * *epoch* — a timestamp written once into a Redis that has no epoch yet, so a Redis that came back
 * without its data gets a new one. Time is Redis's own (`TIME`), so processes whose clocks disagree
 * still agree on leases and windows.
 *
 * Trust: the hold store shares this client's connection, so a dropped connection is seen here at the
 * same moment. Redis is untrusted from a dropped connection or a failed call (`suspect`) until the next
 * successful heartbeat, and for `resyncMs` after an epoch began, the time every live process needs to
 * reconnect (ioredis retries every ≤ 2 s) and re-register what it owns.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { FleetView, ResyncReason } from '../core/fleet.js';
import { RedisScriptClient } from './redis-script-client.js';

const FLEET_LUA = `
pcall(redis.replicate_commands)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - lease)
redis.call('PEXPIRE', KEYS[1], lease * 4)
redis.call('SET', KEYS[2], now, 'NX')
return {redis.call('ZCARD', KEYS[1]), redis.call('GET', KEYS[2]), now}
`;

/** The fleet's keys under `prefix`: the live processes, and the epoch (read by hold admissions too). */
export function fleetKeys(prefix: string): { procs: string; epoch: string } {
  return { procs: `${prefix}{fleet}:procs`, epoch: `${prefix}{fleet}:epoch` };
}

export interface RedisFleetOptions {
  /** The connection shared with the hold store (created with `failFastRedisOptions`). */
  redis: Redis;
  /** Prefix of the fleet's keys (`<prefix>{fleet}:procs`, `<prefix>{fleet}:epoch`). */
  keyPrefix: string;
  /** Heartbeat period (default 1000 ms). */
  heartbeatMs?: number;
  /** A process missing this long is no longer counted (default 5 × heartbeat). */
  leaseMs?: number;
  /** After a new epoch, how long nobody trusts Redis alone (default 5000 ms). */
  resyncMs?: number;
  /** Local clock for the resync window (default Date.now). */
  now?: () => number;
  timeoutMs?: number;
  /**
   * A failed heartbeat (for logs), once per outage, and once while Redis was never reached; `seen`:
   * whether this process reached it before (if not, it cannot know its share and refuses paid requests).
   */
  onUnreachable?: (error: unknown, seen: boolean) => void;
}

export class RedisFleet implements FleetView {
  readonly processId = randomBytes(8).toString('hex');
  private readonly client: RedisScriptClient;
  private readonly keys: string[];
  private readonly heartbeatMs: number;
  private readonly leaseMs: number;
  private readonly resyncMs: number;
  private readonly now: () => number;
  private readonly listeners = new Set<(reason: ResyncReason) => void>();
  private readonly trustListeners = new Set<(trusted: boolean) => void>();
  /** `trusted` as last told to the trust listeners. */
  private toldTrusted = false;
  private timer: NodeJS.Timeout | null = null;
  private seenEpoch: string | null = null;
  private toldUnseen = false;
  private healthy = false;
  /** Set on a lost connection or failed call: the next successful heartbeat reports a reconnect. */
  private cutOff = false;
  private untrustedUntil = 0;
  private beating: Promise<void> | null = null;
  /** Heartbeats failed in a row on a live connection: two end the trust (one may be this process's own stall). */
  private failedBeats = 0;
  size = 1;
  seen = false;

  constructor(private readonly options: RedisFleetOptions) {
    this.heartbeatMs = options.heartbeatMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? 5 * this.heartbeatMs;
    this.resyncMs = options.resyncMs ?? 5_000;
    this.now = options.now ?? Date.now;
    const keys = fleetKeys(options.keyPrefix);
    this.keys = [keys.procs, keys.epoch];
    this.client = new RedisScriptClient({
      redis: options.redis,
      lua: FLEET_LUA,
      commandName: 'tollgateFleetV1',
      unavailableMessage: 'Redis is unavailable',
      timeoutMs: options.timeoutMs ?? 500,
    });
    options.redis.on('close', () => this.untrust());
    options.redis.on('ready', () => void this.heartbeat());
  }

  get trusted(): boolean {
    return this.healthy && this.now() >= this.untrustedUntil;
  }

  get resyncing(): boolean {
    return this.healthy && this.now() < this.untrustedUntil;
  }

  /** Starts the heartbeat; resolves after the first one (reached or not). */
  async start(): Promise<void> {
    this.timer ??= setInterval(() => void this.heartbeat(), this.heartbeatMs);
    this.timer.unref();
    await this.heartbeat();
  }

  onResync(listener: (reason: ResyncReason) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onTrustChange(listener: (trusted: boolean) => void): () => void {
    this.trustListeners.add(listener);
    return () => this.trustListeners.delete(listener);
  }

  private tellTrust(): void {
    const trusted = this.trusted;
    if (trusted === this.toldTrusted) return;
    this.toldTrusted = trusted;
    for (const listener of this.trustListeners) listener(trusted);
  }

  /**
   * A call failed. Only a lost connection stops the trust: a call that merely timed out on a live
   * connection (an overloaded process) fails that request closed, and the fleet keeps its shared view —
   * otherwise one slow process would admit from its share while the others, trusting Redis, do not see
   * those holds. A Redis that accepts but stops answering is caught by the next heartbeat.
   */
  get epoch(): string | null {
    return this.seenEpoch;
  }

  checkNow(): Promise<void> {
    return this.heartbeat();
  }

  suspect(): void {
    if (this.options.redis.status !== 'ready') this.untrust();
  }

  private untrust(): void {
    // A resync window that ended since the last heartbeat was a trusted spell the listeners have not
    // heard of: they hear of it now, so this loss of trust is a new outage to them.
    if (this.trusted) this.tellTrust();
    if (this.healthy) this.cutOff = true;
    this.healthy = false;
    this.tellTrust();
  }

  /** One heartbeat now (concurrent callers share it). */
  heartbeat(): Promise<void> {
    this.beating ??= this.beat().finally(() => (this.beating = null));
    return this.beating;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.untrust();
  }

  private async beat(): Promise<void> {
    let reply: unknown;
    try {
      reply = await this.client.run(this.keys, [this.processId, this.leaseMs]);
    } catch (error) {
      this.failedBeats++;
      if (this.options.redis.status === 'ready' && this.failedBeats < 2 && this.healthy) return;
      // Once when trust is lost, and once while Redis was never reached (not at every heartbeat).
      if (this.healthy || (!this.seen && !this.toldUnseen)) {
        this.toldUnseen ||= !this.seen;
        this.options.onUnreachable?.(error, this.seen);
      }
      this.untrust();
      return;
    }
    if (!Array.isArray(reply) || reply.length !== 3) {
      this.untrust();
      return;
    }
    // A resync window that ended since the last heartbeat was a trusted spell: told before this one's news.
    this.tellTrust();
    const [count, epoch, redisNow] = [Number(reply[0]), String(reply[1]), Number(reply[2])];
    const resyncLeft = Number(epoch) + this.resyncMs - redisNow;
    if (resyncLeft > 0) this.untrustedUntil = Math.max(this.untrustedUntil, this.now() + resyncLeft);
    const reason: ResyncReason | null =
      this.seenEpoch !== null && epoch !== this.seenEpoch ? 'epoch' : this.cutOff ? 'reconnect' : null;
    this.failedBeats = 0;
    this.seenEpoch = epoch;
    // Inside a resync window the lease set is being rebuilt (an emptied Redis lists only the processes
    // that beat since): the count never falls then, or the first process to look would count itself
    // alone and take a whole balance as its share (an outside check: 1.6 M units past the bound).
    this.size = resyncLeft > 0 && this.seen ? Math.max(this.size, count) : Math.max(1, count);
    this.seen = true;
    this.cutOff = false;
    this.healthy = true;
    this.tellTrust();
    if (reason) for (const listener of this.listeners) listener(reason);
  }
}
