/**
 * What a process knows of the fleet it shares Redis with (docs/architecture.md, "Redis outages"):
 * how many gateway processes are alive, and whether the shared counters in Redis can be trusted for
 * admission right now.
 *
 * Redis is *trusted* while this process reaches it and its data is known to hold every live process's
 * holds and counts. It is not trusted while unreachable, and not during the resync window after Redis
 * came back without its data (a new epoch): every process then re-registers what it owns (its
 * in-flight holds, its recent rate-limit admissions), and until the window closes each process admits
 * from its own share (1/size of what remains), so the fleet together stays within the limits.
 */
/**
 * `epoch`: Redis lost its data (restart without persistence, failover to an empty replica); counters
 * must be restored. `reconnect`: this process was cut off; what it wrote meanwhile may be missing, but
 * Redis kept its data (restoring anything that is not idempotent would count it twice).
 */
export type ResyncReason = 'epoch' | 'reconnect';

export interface FleetView {
  /** Live processes last seen sharing the Redis (≥ 1); while Redis is away, the last figure seen. */
  readonly size: number;
  /** True when admission may rely on Redis alone (reachable, and not inside a resync window). */
  readonly trusted: boolean;
  /** Reachable, but inside a resync window (Redis came back without its data): not trusted yet. */
  readonly resyncing?: boolean;
  /** True once this process has reached Redis at least once (its `size` is a measurement, not a guess). */
  readonly seen: boolean;
  /**
   * Called when this process must re-register what it owns in Redis: after Redis came back empty (a
   * new epoch), and after this process reconnects (its writes of the meantime were lost). Returns an
   * unsubscribe function.
   */
  onResync(listener: (reason: ResyncReason) => void): () => void;
  /**
   * Called when `trusted` changes (within a heartbeat of a resync window's end). Returns an
   * unsubscribe function.
   */
  onTrustChange(listener: (trusted: boolean) => void): () => void;
  /** A call to Redis failed: if the connection is lost, stop trusting Redis until the next successful heartbeat. */
  suspect(): void;
  /**
   * A counter in Redis went back (it lost its data on a live connection: FLUSHALL, eviction, a failover
   * behind a proxy): look at the epoch now rather than at the next heartbeat. Resolves once looked.
   */
  checkNow?(): Promise<void>;
  /** The Redis epoch this process last saw (null before its first heartbeat, or without Redis). */
  readonly epoch?: string | null;
}

/** A single process with no shared store: always trusted, alone. */
export const SOLO_FLEET: FleetView = {
  size: 1,
  trusted: true,
  seen: true,
  onResync: () => () => undefined,
  onTrustChange: () => () => undefined,
  suspect: () => undefined,
};

/** `amount` split evenly over the fleet, rounded down; a negative amount is kept whole (it refuses anyway). */
export function fleetShare(amount: bigint, size: number): bigint {
  return amount > 0n ? amount / BigInt(Math.max(1, size)) : amount;
}
