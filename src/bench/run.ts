/**
 * `npm run bench`: what the gateway costs, measured side by side with a bare proxy in one run.
 *
 * Processes on one machine: this one (orchestrator + the gateway, so `process.cpuUsage()` here is the
 * gateway's CPU), the simulated provider, the bare proxy (node:http + one undici Pool, bytes piped:
 * the reference) and the load generator. Each has its own event loop: a load generator in the
 * gateway's thread would steal the very loop it measures. On a 2-core box they compete for cores, as
 * they would for any proxy measured on one host; both proxies meet the same competition, in
 * interleaved rounds, so their ratio is what the figures are about.
 *
 * Sections (BENCH_ONLY=<comma list> runs some): throughput (closed loop), latency (open loop at a
 * fixed rate), streaming, memory (10,000 open streams), ttfb (one request at a time), activity.
 * Environment: BENCH_DURATION (seconds per measured run, default 5), BENCH_WARMUP (seconds of load
 * each target gets before its first round in those three sections, default 2), BENCH_ROUNDS (interleaved rounds
 * of the throughput, latency and streaming sections, default 3), BENCH_CONNECTIONS (default 50), BENCH_RATE (open-loop rate, default 500),
 * BENCH_STREAMS (concurrent streams, default 64), BENCH_OPEN_STREAMS (default 10000),
 * BENCH_PROFILE=<dir> (CPU profiles of the gateway and of the bare proxy during their throughput and streaming runs).
 * Benchmarks assert no speed: the run exits non-zero only when a request failed or the ledger does
 * not add up.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import {
  constants,
  monitorEventLoopDelay,
  performance,
  PerformanceObserver,
  type PerformanceEntry,
} from 'node:perf_hooks';
import { request } from 'undici';
import { usdToUnits } from '../core/money.js';
import { runActivityBench } from './activity-bench.js';
import { BENCH_MODELS, startBenchGateway, type BenchGateway, type BenchModel, type Ledger } from './bench-gateway.js';
import { cpuNow, startHelper, type CpuTime, type HelperProcess } from './child-process.js';
import type {
  LoadJob,
  LoadResult,
  OpenLoopResult,
  OpenStreamsResult,
  ProbeJob,
  ProbeResult,
  StreamLoadResult,
} from './measure.js';
import { createProfiler, helperProfiler, type Profiler } from './profile.js';
import {
  BARE,
  DIRECT,
  GATEWAY,
  latencyTable,
  memoryTable,
  PLAIN,
  probeTable,
  streamTable,
  throughputTable,
  type LatencyRow,
  type MemoryRow,
  type ProbeRow,
  type StreamRow,
  type Target,
  type ThroughputRow,
} from './report.js';

const DURATION = positiveNumber('BENCH_DURATION', 5);
const ROUNDS = Math.round(positiveNumber('BENCH_ROUNDS', 3));
const CONNECTIONS = Math.round(positiveNumber('BENCH_CONNECTIONS', 50));
const RATE = positiveNumber('BENCH_RATE', 500);
const STREAMS = Math.round(positiveNumber('BENCH_STREAMS', 64));
const OPEN_STREAMS = Math.round(positiveNumber('BENCH_OPEN_STREAMS', 10_000));
/** Seconds of load each target gets before its first measured round (JIT compilation, pools, caches). */
const WARMUP = positiveNumber('BENCH_WARMUP', 2);
const PROFILE_DIR = process.env.BENCH_PROFILE || null;
const PROFILER: Profiler | null = PROFILE_DIR ? createProfiler(PROFILE_DIR) : null;
const PROMPT = [{ role: 'user', content: 'Write a short greeting for the benchmark.' }];
const SECTIONS = ['throughput', 'latency', 'streaming', 'memory', 'ttfb', 'activity'] as const;
type Section = (typeof SECTIONS)[number];

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function sectionsToRun(): Set<Section> {
  const only = process.env.BENCH_ONLY;
  if (only === undefined || only === '') return new Set(SECTIONS);
  const chosen = only.split(',').map((s) => s.trim());
  for (const name of chosen)
    if (!(SECTIONS as readonly string[]).includes(name))
      throw new Error(`BENCH_ONLY takes a comma list of ${SECTIONS.join(', ')}; got "${name}"`);
  return new Set(chosen as Section[]);
}

interface Bench {
  gateway: BenchGateway;
  load: HelperProcess;
  provider: HelperProcess;
  bare: HelperProcess;
  providerUrl: string;
  bareUrl: string;
  failures: string[];
  /** 2xx answers the gateway gave, and how many requests may have been cut off when a run ended. */
  gatewayOk: number;
  gatewayCutOff: number;
}

/** The request a target is sent: the provider's own shape for direct and the bare proxy, the gateway's otherwise. */
function requestFor(
  bench: Bench,
  target: Target,
  model: BenchModel,
  stream: boolean,
): { url: string; headers: Record<string, string>; body: string } {
  const upstream = target === DIRECT || target === BARE;
  // A streamed request to the provider asks for usage, as the gateway does upstream.
  const body = upstream
    ? {
        model: BENCH_MODELS[model].upstream,
        messages: PROMPT,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }
    : { model, messages: PROMPT, ...(stream ? { stream: true } : {}) };
  const base = target === DIRECT ? bench.providerUrl : target === BARE ? bench.bareUrl : `${bench.gateway.url}/api/v1`;
  return {
    url: `${base}/chat/completions`,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${upstream ? 'bench-upstream-key' : bench.gateway.key}`,
    },
    body: JSON.stringify(body),
  };
}

/** Non-streamed requests through the gateway go to `bench/instant` (upstream stream) or `bench/instant-plain`. */
const instantModel = (target: Target): BenchModel => (target === PLAIN ? 'bench/instant-plain' : 'bench/instant');

/** BENCH_PROFILE: the profiler of a proxy target (the gateway in this process, the bare proxy in its own). */
function profilerOf(bench: Bench, target: Target): Profiler | null {
  if (PROFILE_DIR === null || target === DIRECT) return null;
  return target === BARE ? helperProfiler(PROFILE_DIR, bench.bare) : PROFILER;
}

/** The CPU a proxy target spent: the gateway is this process, the bare proxy its helper. */
async function proxyCpu(bench: Bench, target: Target): Promise<number> {
  if (target === BARE) return (await bench.bare.call<CpuTime>('cpu')).micros;
  return cpuNow().micros;
}

/** One request of each kind through the gateway: proves the path works and gives each model's charge. */
async function chargesOf(bench: Bench): Promise<Map<BenchModel, bigint>> {
  const charges = new Map<BenchModel, bigint>();
  for (const model of ['bench/instant', 'bench/instant-plain', 'bench/paced', 'bench/stream50'] as const) {
    const { url, headers, body } = requestFor(bench, GATEWAY, model, false);
    const response = await request(url, { method: 'POST', headers, body });
    const text = await response.body.text();
    if (response.statusCode !== 200)
      throw new Error(`probe request for ${model} failed: ${response.statusCode} ${text}`);
    const cost = (JSON.parse(text) as { usage?: { cost?: unknown } }).usage?.cost;
    if (typeof cost !== 'number' || cost <= 0) throw new Error(`probe request for ${model} reported no cost: ${text}`);
    charges.set(model, usdToUnits(cost));
  }
  return charges;
}

function countGateway(bench: Bench, target: Target, ok: number, cutOff: number): void {
  if (target === GATEWAY || target === PLAIN) {
    bench.gatewayOk += ok;
    bench.gatewayCutOff += cutOff;
  }
}

/**
 * Warms each target once, then runs ROUNDS rounds with every target in turn inside a round, so the
 * targets of one round meet the same stretch of the machine's time (on a shared machine that moves).
 */
async function interleaved<T extends Target>(
  targets: readonly T[],
  warm: (target: T) => Promise<void>,
  measure: (target: T, round: number) => Promise<void>,
): Promise<void> {
  for (const target of targets) await warm(target);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of targets) await measure(target, round);
  }
}

/** Closed loop, non-streamed: interleaved rounds of the bare proxy and the gateway's two paths. */
async function throughputSection(bench: Bench): Promise<ThroughputRow[]> {
  const targets: Target[] = [BARE, PLAIN, GATEWAY];
  const rows = new Map<Target, ThroughputRow>(
    targets.map((t) => [
      t,
      { target: t, rounds: [], cpuMicros: 0, completed: 0, commits: { transactions: 0, charges: 0 } },
    ]),
  );
  const job = (target: Target, durationSec: number): LoadJob => ({
    ...requestFor(bench, target, instantModel(target), false),
    connections: CONNECTIONS,
    durationSec,
  });
  const warm = async (target: Target) => {
    const result = await bench.load.call<LoadResult>('load', job(target, WARMUP));
    checkLoad(bench, `throughput ${target} (warm-up)`, result);
    countGateway(bench, target, result.ok2xx, CONNECTIONS);
  };
  await interleaved(targets, warm, async (target, round) => {
    const row = rows.get(target)!;
    const profiler = profilerOf(bench, target);
    await profiler?.start();
    const commitsBefore = await bench.gateway.commits();
    const cpuBefore = await proxyCpu(bench, target);
    const result = await bench.load.call<LoadResult>('load', job(target, DURATION));
    const cpu = (await proxyCpu(bench, target)) - cpuBefore;
    const commitsAfter = await bench.gateway.commits();
    if (profiler) console.error(`bench: profile written to ${await profiler.stop(`throughput-${target}-${round}`)}`);
    checkLoad(bench, `throughput ${target} round ${round}`, result);
    countGateway(bench, target, result.ok2xx, CONNECTIONS);
    row.rounds.push(result);
    row.cpuMicros += cpu;
    row.completed += result.completed;
    if (target !== BARE) {
      row.commits.transactions += commitsAfter.transactions - commitsBefore.transactions;
      row.commits.charges += commitsAfter.charges - commitsBefore.charges;
    }
    console.error(
      `bench: throughput round ${round}/${ROUNDS} ${target}: ${Math.round(result.requestsPerSec)} req/s, ${Math.round(cpu / Math.max(1, result.completed))} µs CPU/req`,
    );
  });
  return [...rows.values()];
}

function checkLoad(bench: Bench, what: string, r: LoadResult): void {
  if (r.errors > 0 || r.timeouts > 0 || r.non2xx > 0)
    bench.failures.push(`${what}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx`);
  if (r.ok2xx === 0) bench.failures.push(`${what}: no successful response`);
}

/**
 * The gateway's (this process's) mark-compacts until `stop()`: each stops every request in flight,
 * so they are the usual cause of a round's tail. Their pauses, in milliseconds.
 */
function watchMarkCompacts(): { stop(): Promise<number[]> } {
  const pauses: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (
        (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ===
        constants.NODE_PERFORMANCE_GC_MAJOR
      ) {
        pauses.push(entry.duration);
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    async stop() {
      await new Promise((resolve) => setImmediate(resolve)); // entries are delivered on a later tick
      observer.disconnect();
      return pauses;
    },
  };
}

/**
 * Open loop at BENCH_RATE: the latency each target adds to the provider's own, in interleaved rounds
 * (a tail measured once on a shared machine says more about the machine than about the proxy).
 */
async function latencySection(bench: Bench): Promise<LatencyRow[]> {
  const targets = [DIRECT, BARE, PLAIN, GATEWAY] as const;
  const rows = new Map<Target, LatencyRow>(targets.map((t) => [t, { target: t, rounds: [] }]));
  const job = (target: Target, durationSec: number) => ({
    ...requestFor(bench, target, instantModel(target), false),
    ratePerSec: RATE,
    durationSec,
  });
  const warm = async (target: Target) => {
    const result = await bench.load.call<OpenLoopResult>('openLoop', job(target, WARMUP));
    countGateway(bench, target, result.ok, 0);
    for (const failure of result.failures) bench.failures.push(`latency ${target} (warm-up): ${failure}`);
  };
  await interleaved(targets, warm, async (target, round) => {
    // The gateway's event-loop delay meanwhile: a pause there is a pause for every request in flight.
    const loop = monitorEventLoopDelay({ resolution: 1 });
    const gateway = target === PLAIN || target === GATEWAY;
    const waitBefore = gateway ? await bench.gateway.settleWait() : null;
    const markCompacts = gateway ? watchMarkCompacts() : null;
    loop.enable();
    const result = await bench.load.call<OpenLoopResult>('openLoop', job(target, DURATION));
    loop.disable();
    const compactions = markCompacts ? await markCompacts.stop() : null;
    const waitAfter = gateway ? await bench.gateway.settleWait() : null;
    const answers = waitBefore && waitAfter ? waitAfter.count - waitBefore.count : 0;
    const settleWait =
      waitBefore && waitAfter && answers > 0
        ? {
            meanMs: ((waitAfter.seconds - waitBefore.seconds) * 1000) / answers,
            over5msShare: (waitAfter.over5ms - waitBefore.over5ms) / answers,
          }
        : null;
    countGateway(bench, target, result.ok, 0);
    for (const failure of result.failures) bench.failures.push(`latency ${target} round ${round}: ${failure}`);
    const gatewayLoop =
      gateway && compactions
        ? { p99Ms: loop.percentile(99) / 1e6, maxMs: loop.max / 1e6, markCompacts: compactions }
        : null;
    rows.get(target)!.rounds.push({ result, gatewayLoop, settleWait });
    console.error(
      `bench: latency round ${round}/${ROUNDS} ${target}: p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`,
    );
  });
  return [...rows.values()];
}

/** BENCH_STREAMS concurrent streams of 50 tokens at 200 tokens/s, closed loop, in interleaved rounds. */
async function streamingSection(bench: Bench): Promise<StreamRow[]> {
  const targets = [DIRECT, BARE, GATEWAY] as const;
  const rows = new Map<Target, StreamRow>(targets.map((t) => [t, { target: t, rounds: [] }]));
  const job = (target: Target, durationSec: number) => ({
    ...requestFor(bench, target, 'bench/stream50', true),
    concurrency: STREAMS,
    durationSec,
  });
  const warm = async (target: Target) => {
    const result = await bench.load.call<StreamLoadResult>('streams', job(target, WARMUP));
    countGateway(bench, target, result.streams, 0);
    for (const failure of result.failures) bench.failures.push(`streaming ${target} (warm-up): ${failure}`);
  };
  await interleaved(targets, warm, async (target, round) => {
    const profiler = round === 1 ? profilerOf(bench, target) : null;
    await profiler?.start();
    const cpuBefore = target === DIRECT ? 0 : await proxyCpu(bench, target);
    const result = await bench.load.call<StreamLoadResult>('streams', job(target, DURATION));
    const cpu = target === DIRECT ? null : (await proxyCpu(bench, target)) - cpuBefore;
    if (profiler) console.error(`bench: profile written to ${await profiler.stop(`streaming-${target}`)}`);
    countGateway(bench, target, result.streams, 0);
    for (const failure of result.failures) bench.failures.push(`streaming ${target} round ${round}: ${failure}`);
    rows.get(target)!.rounds.push({ result, cpuMicros: cpu });
    console.error(
      `bench: streaming round ${round}/${ROUNDS} ${target}: ${result.streamsPerSec.toFixed(0)} streams/s` +
        (cpu === null ? '' : `, ${Math.round(cpu / Math.max(1, result.streams))} µs CPU/stream`),
    );
  });
  return [...rows.values()];
}

/**
 * Raises this process's open-file limit (forked helpers inherit it): BENCH_OPEN_STREAMS streams take
 * a socket each in the gateway (and share HTTP/2 connections upstream). Returns the limit in force.
 */
function raiseFileLimit(wanted: number): number {
  try {
    execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${wanted}:${wanted}`], { stdio: 'ignore' });
  } catch {
    // Not allowed (not root, or no prlimit): the current limit stands.
  }
  try {
    const out = execFileSync('prlimit', [`--pid=${process.pid}`, '--nofile', '--raw', '--noheadings', '-o', 'SOFT'])
      .toString()
      .trim();
    return Number(out) || 1024;
  } catch {
    return 1024;
  }
}

/** File descriptors this process has open (Linux); elsewhere a guess that leaves room. */
function openFiles(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 4_096;
  }
}

/**
 * BENCH_OPEN_STREAMS slow streams held open through the gateway: its resident memory per stream. The
 * provider speaks HTTP/2 (h2c, `http2: true`), so the streams share ~1 upstream connection per 100.
 */
async function memorySection(bench: Bench, fileLimit: number): Promise<MemoryRow> {
  // One socket per stream in this process (the caller's), one per 100 streams upstream, on top of
  // what it has open already, with a margin.
  const count = Math.min(OPEN_STREAMS, Math.floor(((fileLimit - openFiles() - 256) * 100) / 101));
  if (count < OPEN_STREAMS)
    console.error(`bench: the open-file limit (${fileLimit}) allows ${count} streams, not ${OPEN_STREAMS}`);
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const connectionsBefore = await bench.provider.call<number>('h2Connections');
  const started = performance.now();
  const opened = await bench.load.call<OpenStreamsResult>('openStreams', {
    ...requestFor(bench, GATEWAY, 'bench/slow-h2', true),
    count,
    batch: 500,
  });
  const openSec = (performance.now() - started) / 1000;
  // Let the streams run a moment (a few tokens each) before reading the gauge.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const rssOpen = process.memoryUsage().rss;
  const heapOpen = process.memoryUsage().heapUsed;
  const upstreamConnections = (await bench.provider.call<number>('h2Connections')) - connectionsBefore;
  await bench.load.call<void>('closeStreams');
  for (const failure of opened.failures) bench.failures.push(`memory: ${failure}`);
  if (opened.open < count) bench.failures.push(`memory: ${opened.open} of ${count} streams opened`);
  // Every held stream ends cut by its caller: charged (cancelled) or not, within the ledger's range.
  bench.gatewayCutOff += count;
  console.error(
    `bench: memory: ${opened.open} streams open, RSS ${(rssOpen / 2 ** 20).toFixed(0)} MiB, ${upstreamConnections} upstream connections`,
  );
  return { streams: opened.open, rssBefore, rssOpen, heapOpen, openSec, upstreamConnections };
}

/** One request at a time: time to first byte without queueing. */
async function ttfbSection(bench: Bench): Promise<ProbeRow[]> {
  const rows: ProbeRow[] = [];
  const measure = async (scenario: string, target: Target, model: BenchModel, count: number) => {
    const job: ProbeJob = {
      ...requestFor(bench, target, model, true),
      count,
      warmup: Math.max(1, Math.floor(count / 10)),
    };
    const result = await bench.load.call<ProbeResult>('probe', job);
    for (const failure of result.failures.slice(0, 3)) bench.failures.push(`${scenario} ${target} probe: ${failure}`);
    countGateway(bench, target, count - result.failures.length, 0);
    rows.push({ scenario, target, result });
  };
  for (const target of [DIRECT, BARE, GATEWAY] as const)
    await measure('instant (40 tokens)', target, 'bench/instant', Math.max(50, Math.round(50 * DURATION)));
  for (const target of [DIRECT, BARE, GATEWAY] as const)
    await measure('paced (20 tokens at 100/s)', target, 'bench/paced', Math.max(5, Math.round(DURATION)));
  return rows;
}

/** Every charge is in the ledger exactly once: key counters = account total = sum of generation rows. */
function checkLedger(bench: Bench, ledger: Ledger, charges: Map<BenchModel, bigint>): string {
  const usd = (units: bigint) => (Number(units) / 1e9).toFixed(6);
  if (ledger.keyUsage !== ledger.generationsCost || ledger.accountUsage !== ledger.generationsCost) {
    bench.failures.push(
      `ledger mismatch: key usage ${ledger.keyUsage}, account usage ${ledger.accountUsage}, sum of generations ${ledger.generationsCost} (units of 1e-9 USD)`,
    );
  }
  if (ledger.errored > 0) bench.failures.push(`${ledger.errored} generations ended in an error`);
  // Each answer is charged exactly once; requests cut off when a run ended may be charged without being counted.
  const floor = bench.gatewayOk + charges.size;
  if (ledger.generations < floor || ledger.generations > floor + bench.gatewayCutOff) {
    bench.failures.push(
      `expected ${floor}..${floor + bench.gatewayCutOff} generations (2xx answers + cut-off requests), found ${ledger.generations}`,
    );
  }
  const expected = new Set(charges.values());
  const odd = [...ledger.costs].filter(([cost]) => !expected.has(cost));
  if (odd.length > 0)
    bench.failures.push(
      `completed generations with unexpected charges: ${odd.map(([c, n]) => `${n}×${c}`).join(', ')}`,
    );
  return (
    `Accounting: ${ledger.generations.toLocaleString('en-US')} generations (${ledger.cancelled.toLocaleString('en-US')} cut off by their caller), ` +
    `key usage ${usd(ledger.keyUsage)} USD, account usage ${usd(ledger.accountUsage)} USD, sum of generation charges ${usd(ledger.generationsCost)} USD`
  );
}

/** The `/activity` section: its own gateway and database, after the proxy sections. */
async function activitySection(): Promise<number> {
  const { lines, failures } = await runActivityBench((line) => console.error(line));
  console.log('');
  for (const line of lines) console.log(line);
  if (failures.length > 0) {
    console.error(`\nBENCH FAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    return 1;
  }
  return 0;
}

async function main(): Promise<number> {
  const sections = sectionsToRun();
  const proxy = [...sections].some((s) => s !== 'activity') ? await proxyBench(sections) : 0;
  const activity = sections.has('activity') ? await activitySection() : 0;
  return proxy || activity;
}

async function proxyBench(sections: Set<Section>): Promise<number> {
  const fileLimit = sections.has('memory') ? raiseFileLimit(OPEN_STREAMS + 4_096) : 0;
  const started: { stop(): Promise<void> }[] = [];
  try {
    const provider = await startHelper('provider-process.js');
    started.push(provider);
    const load = await startHelper('load-process.js');
    started.push(load);
    const bare = await startHelper('bare-proxy-process.js');
    started.push(bare);
    const providerUrl = await provider.call<string>('start');
    const h2ProviderUrl = await provider.call<string>('startH2');
    const bareUrl = await bare.call<string>('start', providerUrl);
    // Each held stream of the memory row is a client connection: the default cap (8,192) is raised past them.
    const gateway = await startBenchGateway(providerUrl, h2ProviderUrl, {
      maxConnections: sections.has('memory') ? Math.max(8_192, OPEN_STREAMS + 1_024) : undefined,
    });
    started.push(gateway);
    const bench: Bench = {
      gateway,
      load,
      provider,
      bare,
      providerUrl,
      bareUrl,
      failures: [],
      gatewayOk: 0,
      gatewayCutOff: 0,
    };
    const charges = await chargesOf(bench);

    const loadBefore = loadavg()[0]!;
    if (loadBefore > 0.5)
      console.error(
        `bench: WARNING the machine is not idle (load average ${loadBefore.toFixed(2)}): other processes will skew the numbers`,
      );
    const out: string[] = [];
    const print = (...lines: string[]) => out.push(...lines, '');
    if (sections.has('throughput')) {
      print(
        `### Throughput: non-streamed requests, closed loop (${CONNECTIONS} keep-alive connections), ${ROUNDS} interleaved rounds of ${DURATION} s`,
        throughputTable(await throughputSection(bench)),
      );
    }
    if (sections.has('latency')) {
      print(
        `### Added latency: open loop at ${RATE} req/s, ${ROUNDS} interleaved rounds of ${DURATION} s (latency from each request's scheduled time; medians of the rounds, each round's added p99 listed)`,
        latencyTable(await latencySection(bench)),
      );
    }
    if (sections.has('streaming')) {
      print(
        `### Streaming: ${STREAMS} concurrent streams of 50 tokens at 200 tokens/s (one upstream write per token), closed loop, ${ROUNDS} interleaved rounds of ${DURATION} s (medians of the rounds)`,
        streamTable(await streamingSection(bench)),
      );
    }
    if (sections.has('memory')) {
      print(
        `### Memory: slow streams (a token every 5 s) held open through the gateway, each past its first token, from a provider speaking HTTP/2 (h2c)`,
        memoryTable(await memorySection(bench, fileLimit)),
      );
    }
    if (sections.has('ttfb')) {
      print(
        `### Time to first byte, one streamed request at a time (no queueing)`,
        probeTable(await ttfbSection(bench)),
      );
    }
    const loadAfter = loadavg()[0]!;
    await gateway.quiesce();
    const accounting = checkLedger(bench, await gateway.ledger(), charges);

    console.log(`## Tollgate proxy benchmark\n`);
    console.log(
      `Node ${process.version}, ${availableParallelism()} cores. The simulated provider, the bare proxy (node:http + one undici Pool, bytes piped), ` +
        `the gateway (defaults: embedded SQLite with synchronous=FULL, holds, metering, metrics, edge guard) and the load generator each in their own process on loopback. ` +
        `1-minute load average before/after: ${loadBefore.toFixed(2)}/${loadAfter.toFixed(2)}. ` +
        `Request: one short user message, answer of 40 tokens. "${GATEWAY}" asks the provider for a stream even for a non-streamed request (the default \`stream_upstream: true\`); ` +
        `"${PLAIN}" is a provider with \`stream_upstream: false\`.\n`,
    );
    for (const line of out) console.log(line);
    console.log(accounting);

    if (bench.failures.length > 0) {
      console.error(`\nBENCH FAILED:\n${bench.failures.map((f) => `  - ${f}`).join('\n')}`);
      return 1;
    }
    return 0;
  } finally {
    for (const part of started.reverse())
      await part.stop().catch((error: unknown) => console.error('bench: stop failed', error));
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error('BENCH FAILED:', error);
    process.exitCode = 1;
  },
);
