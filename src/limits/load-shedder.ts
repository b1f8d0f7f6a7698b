/**
 * Overload shedding by client address (docs/architecture.md, "DDoS protection"): no address is capped
 * while the gateway has capacity. Under pressure — the event loop lagging, too many requests in
 * flight, the heap nearly full (see overload-signals.ts) — requests from addresses that send far
 * more than their share are refused first, so a flood from one address cannot starve the others,
 * and a single busy client that is the whole load is never throttled by this rule.
 *
 * Each address has a decayed request count (half-life HALF_LIFE_MS): every request adds 1, and all
 * counts decay by the same factor, so the total of all counts is kept exactly by one number decaying
 * the same way, and so is the sum of their logarithms (each falls by the same amount per ms). An
 * address is "heavy" when its count exceeds SHARE_FACTOR × the geometric mean count of the addresses
 * active recently (and that mean by more than MIN_EXCESS). The geometric mean, not the arithmetic one:
 * two flooding addresses beside one normal client made the arithmetic mean a flood's own size, so
 * neither was heavy and the normal client starved (outside check); the geometric mean stays near the
 * typical address's count until flooders outnumber normal clients about five to one. Among equals
 * nobody is heavy; a lone client is the whole load. Shed requests count too: what matters is what an
 * address offers.
 */

const HALF_LIFE_MS = 1_000;
/** An address is active while its last request is this recent. */
const ACTIVE_MS = 5 * HALF_LIFE_MS;
/** Shed under pressure when an address sends more than this multiple of the (geometric) mean active address… */
export const SHARE_FACTOR = 2;
/** …and more than this many (decayed) requests above it: the order of requests within one burst of equals is no flood. */
const MIN_EXCESS = 20;
const SWEEP_EVERY_MS = 1_000;
/** The log sum is recomputed every this many sweeps (an O(addresses) pass). */
const RESUM_EVERY_SWEEPS = 30;

export type Pressure = 'none' | 'overloaded';

interface Client {
  weight: number;
  at: number;
  /** When it last moved to the end of the map (at most once per REORDER_EVERY_MS). */
  movedAt: number;
}

/**
 * The map is kept in order of last request to within this: moving an address to the end on every
 * request is a delete and an insert on a long-lived Map, whose table V8 then rebuilds, in the old
 * generation, every few requests (core/live-list.ts). The sweep and the cap's eviction only need the
 * order to the second.
 */
const REORDER_EVERY_MS = 1_000;

function decay(value: number, elapsedMs: number): number {
  return elapsedMs <= 0 ? value : value * 2 ** (-elapsedMs / HALF_LIFE_MS);
}

/** How much a count's logarithm falls per ms. */
const LOG_DECAY_PER_MS = Math.LN2 / HALF_LIFE_MS;

export interface ShedDecision {
  shed: boolean;
  /** The address's recent rate and the mean's, in requests per second (for the 429's headers and logs). */
  ratePerSecond: number;
  fairPerSecond: number;
}

export class LoadShedder {
  private readonly clients = new Map<string, Client>();
  private total = 0;
  private totalAt = 0;
  private lastSweep = 0;
  /** Σ of each address's `logTerm`: Σ ln(count now) = logSum − n × (now − epoch) × LOG_DECAY_PER_MS. */
  private logSum = 0;
  /** Times are taken from here, so the terms stay small. */
  private epoch: number | null = null;
  private sweeps = 0;

  constructor(private readonly maxClients: number) {}

  /** An address's count as a log term that does not change while it decays. */
  private logTerm(client: Client): number {
    return Math.log(client.weight) + (client.at - (this.epoch ?? 0)) * LOG_DECAY_PER_MS;
  }

  /** Counts a request from `ip` and says whether to shed it under `pressure`. */
  admit(ip: string, now: number, pressure: Pressure): ShedDecision {
    this.epoch ??= now;
    this.total = decay(this.total, now - this.totalAt) + 1;
    this.totalAt = Math.max(now, this.totalAt);
    let client = this.clients.get(ip);
    if (client) {
      this.logSum -= this.logTerm(client);
      client.weight = decay(client.weight, now - client.at) + 1;
      client.at = Math.max(now, client.at);
      this.logSum += this.logTerm(client);
      if (now - client.movedAt >= REORDER_EVERY_MS) {
        // Most recently seen last, so the oldest is dropped first at the cap.
        this.clients.delete(ip);
        this.clients.set(ip, client);
        client.movedAt = now;
      }
    } else {
      client = { weight: 1, at: now, movedAt: now };
      if (this.clients.size >= this.maxClients) this.dropOldest();
      this.clients.set(ip, client);
      this.logSum += this.logTerm(client);
    }
    if (now - this.lastSweep >= SWEEP_EVERY_MS) this.sweep(now);

    // Per second: a count decaying with half-life h is about rate × h / ln 2.
    const toRate = Math.LN2 / (HALF_LIFE_MS / 1000);
    const fair = this.typical(now);
    const heavy = client.weight > SHARE_FACTOR * fair && client.weight - fair > MIN_EXCESS;
    return { shed: pressure !== 'none' && heavy, ratePerSecond: client.weight * toRate, fairPerSecond: fair * toRate };
  }

  /** The geometric mean of the active addresses' counts now. */
  private typical(now: number): number {
    const n = this.clients.size;
    if (n === 0) return 0;
    return Math.exp(this.logSum / n - (now - (this.epoch ?? now)) * LOG_DECAY_PER_MS);
  }

  get activeClients(): number {
    return this.clients.size;
  }

  private dropOldest(): void {
    const oldest = this.clients.keys().next();
    if (!oldest.done) this.forget(oldest.value);
  }

  private forget(ip: string): void {
    const client = this.clients.get(ip);
    if (!client) return;
    this.clients.delete(ip);
    // Its share leaves the total and the log sum, so the means are over the addresses still active.
    this.total = Math.max(0, this.total - decay(client.weight, this.totalAt - client.at));
    this.logSum -= this.logTerm(client);
  }

  /** Forgets addresses gone quiet (oldest first: the map is in order of last request, to the second). */
  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [ip, client] of this.clients) {
      if (now - client.at < ACTIVE_MS) break;
      this.forget(ip);
    }
    // Summed afresh now and then: what adding and taking away terms leaves of rounding goes.
    if (++this.sweeps % RESUM_EVERY_SWEEPS !== 0) return;
    let sum = 0;
    for (const client of this.clients.values()) sum += this.logTerm(client);
    this.logSum = sum;
  }
}
