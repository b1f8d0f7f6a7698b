/** What the orchestrator asks the load generator for, and what comes back. */

export interface LoadJob {
  url: string;
  connections: number;
  durationSec: number;
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  completed: number;
  ok2xx: number;
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  durationSec: number;
  requestsPerSec: number;
  /** Of 2xx responses, full precision. */
  p50Ms: number;
  p99Ms: number;
  /** CPU the load generator itself spent during the run. */
  loadCpuMicros: number;
}

export interface ProbeJob {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Requests sent one after another... */
  count: number;
  /** ...of which the first `warmup` are not measured. */
  warmup: number;
}

export interface ProbeResult {
  measured: number;
  failures: string[];
  ttfbP50Ms: number;
  ttfbP99Ms: number;
  totalP50Ms: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Open loop: requests sent at a fixed rate whatever the answers do; latency counted from each request's scheduled time. */
export interface OpenLoopJob {
  url: string;
  headers: Record<string, string>;
  body: string;
  ratePerSec: number;
  durationSec: number;
}

export interface OpenLoopResult {
  sent: number;
  ok: number;
  failures: string[];
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The rate the generator achieved (it reports when it fell behind). */
  achievedPerSec: number;
}

/** Closed loop of streams: `concurrency` callers, each reading a stream to its end and starting the next. */
export interface StreamLoadJob {
  url: string;
  headers: Record<string, string>;
  body: string;
  concurrency: number;
  durationSec: number;
}

export interface StreamLoadResult {
  streams: number;
  failures: string[];
  durationSec: number;
  streamsPerSec: number;
  /** Time to the first content token (not a comment or an empty role chunk). */
  ttftP50Ms: number;
  ttftP99Ms: number;
  totalP50Ms: number;
  loadCpuMicros: number;
}

/** Many streams opened and kept open (each has received its first content token), until `closeStreams`. */
export interface OpenStreamsJob {
  url: string;
  headers: Record<string, string>;
  body: string;
  count: number;
  /** Streams opened at a time. */
  batch: number;
}

export interface OpenStreamsResult {
  open: number;
  failures: string[];
}
