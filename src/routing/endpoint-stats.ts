/**
 * Measured endpoint statistics: uptime over 5 min / 30 min / 1 day, and percentiles of time to
 * first token and throughput over 30 min. Per-minute buckets in a ring (1440 of them), each with
 * success/failure counts and a bounded sample of latencies and throughputs, so memory per endpoint
 * is fixed whatever the traffic.
 */

const MINUTE = 60_000;
const BUCKETS = 1440;
const SAMPLES_PER_BUCKET = 32;

interface Bucket {
  minute: number; // epoch minute this bucket holds; stale buckets are reused
  ok: number;
  failed: number;
  latencies: number[];
  throughputs: number[];
  seen: number; // samples offered this minute (for reservoir sampling)
}

export interface Percentiles {
  p50: number;
  p75: number;
  p90: number;
  p99: number;
}

export interface EndpointStatsSnapshot {
  uptime5m: number | null; // percent, null without data
  uptime30m: number | null;
  uptime1d: number | null;
  latency30m: Percentiles | null; // ms to first token
  throughput30m: Percentiles | null; // tokens per second
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

function percentiles(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = values.sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p75: percentile(sorted, 75),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
  };
}

/** How long a computed time-to-first-token p99 is reused before the samples are sorted again. */
const FIRST_TOKEN_CACHE_MS = 5_000;

export class EndpointStats {
  private readonly buckets: (Bucket | undefined)[] = new Array(BUCKETS);
  private firstToken: { at: number; value: { p99: number; samples: number } | null } | null = null;

  private bucket(now: number): Bucket {
    const minute = Math.floor(now / MINUTE);
    const slot = minute % BUCKETS;
    let bucket = this.buckets[slot];
    if (!bucket || bucket.minute !== minute) {
      bucket = { minute, ok: 0, failed: 0, latencies: [], throughputs: [], seen: 0 };
      this.buckets[slot] = bucket;
    }
    return bucket;
  }

  recordSuccess(now: number, latencyMs: number | null, tokensPerSecond: number | null): void {
    this.bucket(now).ok++;
    this.recordSample(now, latencyMs, tokensPerSecond);
  }

  /** A latency and/or throughput measurement, without counting an outcome (a stream's throughput is known only at its end). */
  recordSample(now: number, latencyMs: number | null, tokensPerSecond: number | null): void {
    if (latencyMs === null && tokensPerSecond === null) return;
    const bucket = this.bucket(now);
    bucket.seen++;
    // Reservoir sampling keeps a uniform sample of the minute in fixed space.
    const slot =
      bucket.latencies.length < SAMPLES_PER_BUCKET ? bucket.latencies.length : Math.floor(Math.random() * bucket.seen);
    if (slot < SAMPLES_PER_BUCKET) {
      if (latencyMs !== null) bucket.latencies[slot] = latencyMs;
      if (tokensPerSecond !== null) bucket.throughputs[slot] = tokensPerSecond;
    }
  }

  recordFailure(now: number): void {
    this.bucket(now).failed++;
  }

  /** Outcomes other processes counted (fleet-wide uptime); their latency samples stay theirs. */
  recordRemote(now: number, ok: number, failed: number): void {
    const bucket = this.bucket(now);
    bucket.ok += ok;
    bucket.failed += failed;
  }

  private recent(now: number, minutes: number): Bucket[] {
    const current = Math.floor(now / MINUTE);
    const out: Bucket[] = [];
    for (let m = current - minutes + 1; m <= current; m++) {
      const bucket = this.buckets[((m % BUCKETS) + BUCKETS) % BUCKETS];
      if (bucket && bucket.minute === m) out.push(bucket);
    }
    return out;
  }

  private uptime(now: number, minutes: number): number | null {
    let ok = 0;
    let failed = 0;
    for (const b of this.recent(now, minutes)) {
      ok += b.ok;
      failed += b.failed;
    }
    return ok + failed === 0 ? null : (ok / (ok + failed)) * 100;
  }

  /**
   * p99 of the time to first token over the last 30 minutes and how many samples it rests on; null
   * without samples. Asked on every attempt, so it is recomputed at most every few seconds.
   */
  firstTokenLatency(now: number): { p99: number; samples: number } | null {
    if (this.firstToken && now - this.firstToken.at < FIRST_TOKEN_CACHE_MS && now >= this.firstToken.at)
      return this.firstToken.value;
    const samples = this.recent(now, 30).flatMap((b) => b.latencies.filter((v) => v !== undefined));
    const value = samples.length === 0 ? null : { p99: percentiles(samples)!.p99, samples: samples.length };
    this.firstToken = { at: now, value };
    return value;
  }

  snapshot(now: number): EndpointStatsSnapshot {
    const last30 = this.recent(now, 30);
    return {
      uptime5m: this.uptime(now, 5),
      uptime30m: this.uptime(now, 30),
      uptime1d: this.uptime(now, BUCKETS),
      latency30m: percentiles(last30.flatMap((b) => b.latencies.filter((v) => v !== undefined))),
      throughput30m: percentiles(last30.flatMap((b) => b.throughputs.filter((v) => v !== undefined))),
    };
  }
}
