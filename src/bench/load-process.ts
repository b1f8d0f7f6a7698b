/**
 * Child process: the load generator. Runs autocannon (closed loop, N keep-alive connections) and a
 * sequential time-to-first-byte probe, and reports its own CPU time so the orchestrator can show
 * where the machine's cores went.
 */
import { setMaxListeners } from 'node:events';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { cpuNow, serveHelper } from './child-process.js';
import {
  percentile,
  type LoadJob,
  type LoadResult,
  type OpenLoopJob,
  type OpenLoopResult,
  type OpenStreamsJob,
  type OpenStreamsResult,
  type ProbeJob,
  type ProbeResult,
  type StreamLoadJob,
  type StreamLoadResult,
} from './measure.js';

async function runLoad(job: LoadJob): Promise<LoadResult> {
  // autocannon's own histogram keeps whole milliseconds; gateway overhead is sub-millisecond, so
  // every 2xx latency is kept at full precision here instead.
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  const cpuBefore = cpuNow().micros;
  let finish: (outcome: { error: unknown; result: autocannon.Result }) => void = () => {};
  const finished = new Promise<{ error: unknown; result: autocannon.Result }>((resolve) => (finish = resolve));
  const instance = autocannon(
    {
      url: job.url,
      method: 'POST',
      connections: job.connections,
      duration: job.durationSec,
      headers: job.headers,
      body: job.body,
      timeout: 10,
    },
    (error, result) => finish({ error, result }),
  );
  instance.on('response', (_client, status, _bytes, responseTime) => {
    if (status < 200 || status >= 300) return;
    if (count === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[count++] = responseTime;
  });
  const { error, result } = await finished;
  if (error) throw error;
  const cpuMicros = cpuNow().micros - cpuBefore;
  const ordered = latencies.subarray(0, count).sort();
  return {
    completed: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSec: result.duration,
    requestsPerSec: result.requests.total / result.duration,
    p50Ms: percentile(ordered, 0.5),
    p99Ms: percentile(ordered, 0.99),
    loadCpuMicros: cpuMicros,
  };
}

/** One request at a time: time to the first body byte and to the end, without queueing noise. */
async function runProbe(job: ProbeJob): Promise<ProbeResult> {
  const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
  const ttfb: number[] = [];
  const total: number[] = [];
  const failures: string[] = [];
  try {
    for (let i = 0; i < job.count; i++) {
      const r = await readStream(job, dispatcher);
      if (r.problem) failures.push(r.problem);
      else if (i >= job.warmup) {
        ttfb.push(r.ttfbMs);
        total.push(r.totalMs);
      }
    }
  } finally {
    await dispatcher.close();
  }
  const sortedTtfb = sorted(ttfb);
  return {
    measured: ttfb.length,
    failures,
    ttfbP50Ms: percentile(sortedTtfb, 0.5),
    ttfbP99Ms: percentile(sortedTtfb, 0.99),
    totalP50Ms: percentile(sorted(total), 0.5),
  };
}

const sorted = (values: readonly number[]) => Float64Array.from(values).sort();

/** Why a finished stream does not count as a success, or null. */
function streamProblem(status: number, text: string): string | null {
  if (status !== 200) return `status ${status}: ${text.slice(0, 200)}`;
  if (!text.includes('data: [DONE]')) return 'stream ended without [DONE]';
  if (text.includes('"finish_reason":"error"')) return `in-band error: ${text.slice(-300)}`;
  return null;
}

const FIRST_CONTENT = /"content":"[^"]/;

/**
 * Open loop at a fixed rate: request i is due at start + i/rate and is sent then, whatever the earlier
 * ones are doing, so a slow answer cannot hide the queueing it causes (no coordinated omission):
 * its latency counts from when it was due.
 */
async function runOpenLoop(job: OpenLoopJob): Promise<OpenLoopResult> {
  const dispatcher = new Agent({ connections: 512, keepAliveTimeout: 30_000 });
  const total = Math.round(job.ratePerSec * job.durationSec);
  const interval = 1000 / job.ratePerSec;
  const latencies: number[] = [];
  const failures: string[] = [];
  const pending: Promise<void>[] = [];
  const one = async (due: number) => {
    try {
      const response = await request(job.url, { method: 'POST', headers: job.headers, body: job.body, dispatcher });
      const text = await response.body.text();
      if (response.statusCode !== 200) failures.push(`status ${response.statusCode}: ${text.slice(0, 200)}`);
      else latencies.push(performance.now() - due);
    } catch (error) {
      failures.push(String(error));
    }
  };
  const start = performance.now() + 20;
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) pending.push(one(start + sent++ * interval));
      if (sent === total) resolve();
      else setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    setTimeout(tick, 20);
  });
  const elapsed = (performance.now() - start) / 1000;
  await Promise.all(pending);
  await dispatcher.close();
  const s = sorted(latencies);
  return {
    sent,
    ok: latencies.length,
    failures: failures.slice(0, 5),
    p50Ms: percentile(s, 0.5),
    p90Ms: percentile(s, 0.9),
    p99Ms: percentile(s, 0.99),
    maxMs: s.length > 0 ? s[s.length - 1]! : Number.NaN,
    achievedPerSec: sent / Math.max(elapsed, 1e-9),
  };
}

/** Reads one stream to its end; time to its first byte, to the first content token and to the end. */
async function readStream(
  job: { url: string; headers: Record<string, string>; body: string },
  dispatcher: Agent,
  signal?: AbortSignal,
  onFirstContent?: () => void,
): Promise<{ ttfbMs: number; ttftMs: number; totalMs: number; problem: string | null }> {
  const started = performance.now();
  const response = await request(job.url, { method: 'POST', headers: job.headers, body: job.body, dispatcher, signal });
  let ttfb = Number.NaN;
  let ttft = Number.NaN;
  let text = '';
  for await (const chunk of response.body) {
    if (Number.isNaN(ttfb)) ttfb = performance.now() - started;
    text += (chunk as Buffer).toString('utf8');
    if (Number.isNaN(ttft) && FIRST_CONTENT.test(text)) {
      ttft = performance.now() - started;
      onFirstContent?.();
    }
  }
  return {
    ttfbMs: ttfb,
    ttftMs: ttft,
    totalMs: performance.now() - started,
    problem: streamProblem(response.statusCode, text),
  };
}

async function runStreamLoad(job: StreamLoadJob): Promise<StreamLoadResult> {
  const dispatcher = new Agent({ connections: job.concurrency, keepAliveTimeout: 30_000 });
  const ttft: number[] = [];
  const total: number[] = [];
  const failures: string[] = [];
  const cpuBefore = cpuNow().micros;
  const started = performance.now();
  const deadline = started + job.durationSec * 1000;
  const caller = async () => {
    while (performance.now() < deadline) {
      try {
        const r = await readStream(job, dispatcher);
        if (r.problem) failures.push(r.problem);
        else {
          ttft.push(r.ttftMs);
          total.push(r.totalMs);
        }
      } catch (error) {
        failures.push(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, caller));
  const durationSec = (performance.now() - started) / 1000;
  const loadCpuMicros = cpuNow().micros - cpuBefore;
  await dispatcher.close();
  const t = sorted(ttft);
  return {
    streams: ttft.length,
    failures: failures.slice(0, 5),
    durationSec,
    streamsPerSec: ttft.length / durationSec,
    ttftP50Ms: percentile(t, 0.5),
    ttftP99Ms: percentile(t, 0.99),
    totalP50Ms: percentile(sorted(total), 0.5),
    loadCpuMicros,
  };
}

/** The streams `openStreams` keeps open, and how to end them. */
let held: { abort: AbortController; done: Promise<unknown>; dispatcher: Agent } | null = null;

async function openStreams(job: OpenStreamsJob): Promise<OpenStreamsResult> {
  if (held) throw new Error('streams are already open');
  const abort = new AbortController();
  // One signal ends every held stream: thousands of listeners on it are the design, not a leak.
  setMaxListeners(0, abort.signal);
  const dispatcher = new Agent({ connections: null, keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  const failures: string[] = [];
  const all: Promise<unknown>[] = [];
  let open = 0;
  for (let offset = 0; offset < job.count; offset += job.batch) {
    const batch: Promise<void>[] = [];
    for (let i = offset; i < Math.min(job.count, offset + job.batch); i++) {
      let opened: () => void = () => {};
      const first = new Promise<void>((resolve) => (opened = resolve));
      const stream = readStream(job, dispatcher, abort.signal, () => {
        open++;
        opened();
      }).then(
        (r) => {
          if (!abort.signal.aborted) failures.push(r.problem ?? 'a stream ended while it was to be held open');
        },
        (error: unknown) => {
          if (!abort.signal.aborted) failures.push(String(error));
        },
      );
      // A stream that fails before its first token settles its slot in the batch too.
      batch.push(Promise.race([first, stream]));
      all.push(stream);
    }
    await Promise.all(batch);
  }
  held = { abort, done: Promise.all(all), dispatcher };
  return { open, failures: failures.slice(0, 5) };
}

async function closeStreams(): Promise<void> {
  if (!held) return;
  const { abort, done, dispatcher } = held;
  held = null;
  abort.abort();
  await done;
  await dispatcher.destroy();
}

serveHelper({
  load: (job: LoadJob) => runLoad(job),
  probe: (job: ProbeJob) => runProbe(job),
  openLoop: (job: OpenLoopJob) => runOpenLoop(job),
  streams: (job: StreamLoadJob) => runStreamLoad(job),
  openStreams: (job: OpenStreamsJob) => openStreams(job),
  closeStreams: () => closeStreams(),
});
