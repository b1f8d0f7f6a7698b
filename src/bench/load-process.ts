/**
 * Child process: the load generator. Runs autocannon (closed loop, N keep-alive connections) and a
 * sequential time-to-first-byte probe, and reports its own CPU time so the orchestrator can show
 * where the machine's cores went.
 */
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { cpuNow, serveHelper } from './child-process.js';
import { percentile, type LoadJob, type LoadResult, type ProbeJob, type ProbeResult } from './measure.js';

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
  const sorted = latencies.subarray(0, count).sort();
  return {
    completed: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSec: result.duration,
    requestsPerSec: result.requests.total / result.duration,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
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
      const started = performance.now();
      const response = await request(job.url, { method: 'POST', headers: job.headers, body: job.body, dispatcher });
      let first = 0;
      let text = '';
      for await (const chunk of response.body) {
        if (first === 0) first = performance.now();
        text += (chunk as Buffer).toString('utf8');
      }
      const ended = performance.now();
      const problem =
        response.statusCode !== 200
          ? `status ${response.statusCode}: ${text.slice(0, 200)}`
          : !text.includes('data: [DONE]')
            ? 'stream ended without [DONE]'
            : text.includes('"finish_reason":"error"')
              ? `in-band error: ${text.slice(-300)}`
              : null;
      if (problem) failures.push(problem);
      else if (i >= job.warmup) {
        ttfb.push(first - started);
        total.push(ended - started);
      }
    }
  } finally {
    await dispatcher.close();
  }
  const sortedTtfb = Float64Array.from(ttfb).sort();
  const sortedTotal = Float64Array.from(total).sort();
  return {
    measured: ttfb.length,
    failures,
    ttfbP50Ms: percentile(sortedTtfb, 0.5),
    ttfbP99Ms: percentile(sortedTtfb, 0.99),
    totalP50Ms: percentile(sortedTotal, 0.5),
  };
}

serveHelper({
  load: (job: LoadJob) => runLoad(job),
  probe: (job: ProbeJob) => runProbe(job),
});
