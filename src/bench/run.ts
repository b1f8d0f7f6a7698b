/**
 * `npm run bench`: the proxy overhead of the gateway, measured side by side in one run.
 *
 * Three processes share the machine: this one (orchestrator + the gateway, so `process.cpuUsage()`
 * here is the gateway's CPU), the simulated provider, and the load generator (autocannon). Each has
 * its own event loop: a load generator in the gateway's thread would steal the very loop it
 * measures. On a 2-core box the three still compete for cores, as they would for any proxy
 * measured on one host (the design's baseline was taken the same way).
 *
 * Environment: BENCH_DURATION (seconds per measured run, default 10), BENCH_CONNECTIONS (default 50),
 * BENCH_PROFILE=<dir> (CPU profiles of the gateway during its measured runs), BENCH_ONLY=activity (only
 * the `/activity` latency section, see activity-bench.ts).
 * Exits non-zero when any request failed or the ledger does not add up.
 */
import { availableParallelism, loadavg } from 'node:os';
import { runActivityBench } from './activity-bench.js';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { usdToUnits } from '../core/money.js';
import { BENCH_MODELS, startBenchGateway, type BenchGateway, type BenchModel, type Ledger } from './bench-gateway.js';
import { cpuNow, startHelper, type CpuTime, type HelperProcess } from './child-process.js';
import type { LoadJob, LoadResult, ProbeJob, ProbeResult } from './measure.js';
import { machineBusyMicros } from './machine-cpu.js';
import { createProfiler, type Profiler } from './profile.js';
import {
  cpuTable,
  loadTable,
  overheadLines,
  PLAIN_UPSTREAM,
  probeTable,
  type LoadRow,
  type ProbeRow,
  type Target,
} from './report.js';

const DURATION = positiveNumber('BENCH_DURATION', 10);
const CONNECTIONS = positiveNumber('BENCH_CONNECTIONS', 50);
const WARMUP = Math.max(1, Math.min(3, Math.round(DURATION / 4)));
const PROFILER: Profiler | null = process.env.BENCH_PROFILE ? createProfiler(process.env.BENCH_PROFILE) : null;
const PROMPT = [{ role: 'user', content: 'Write a short greeting for the benchmark.' }];

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

interface Targets {
  request(
    target: Target,
    model: BenchModel,
    stream: boolean,
  ): { url: string; headers: Record<string, string>; body: string };
}

function targetsFor(providerUrl: string, gateway: BenchGateway): Targets {
  return {
    request(target, model, stream) {
      // Direct is what a caller would send the provider; a streamed one asks for usage, as the gateway does upstream.
      // (A non-streamed request through the gateway goes upstream as a stream unless the provider has `stream_upstream: false`.)
      const body =
        target === 'direct'
          ? {
              model: BENCH_MODELS[model].upstream,
              messages: PROMPT,
              ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
            }
          : { model, messages: PROMPT, ...(stream ? { stream: true } : {}) };
      return {
        url: target === 'direct' ? `${providerUrl}/chat/completions` : `${gateway.url}/api/v1/chat/completions`,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${target === 'direct' ? 'bench-upstream-key' : gateway.key}`,
        },
        body: JSON.stringify(body),
      };
    },
  };
}

/** One request of each kind through the gateway: proves the path works and gives each model's charge. */
async function chargesOf(targets: Targets): Promise<Map<BenchModel, bigint>> {
  const charges = new Map<BenchModel, bigint>();
  for (const model of Object.keys(BENCH_MODELS) as BenchModel[]) {
    const { url, headers, body } = targets.request('gateway', model, false);
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

interface Bench {
  gateway: BenchGateway;
  load: HelperProcess;
  provider: HelperProcess;
  targets: Targets;
  failures: string[];
  /** 2xx answers the gateway gave, and how many requests may have been cut off when a run ended. */
  gatewayOk: number;
  gatewayCutOff: number;
}

function check(bench: Bench, what: string, r: LoadResult): void {
  if (r.errors > 0 || r.timeouts > 0 || r.non2xx > 0)
    bench.failures.push(`${what}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx`);
  if (r.ok2xx === 0) bench.failures.push(`${what}: no successful response`);
}

async function measureLoad(bench: Bench, scenario: string, target: Target, stream: boolean): Promise<LoadRow> {
  const model: BenchModel = target === PLAIN_UPSTREAM ? 'bench/instant-plain' : 'bench/instant';
  const job = (durationSec: number): LoadJob => ({
    ...bench.targets.request(target, model, stream),
    connections: CONNECTIONS,
    durationSec,
  });
  const warm = await bench.load.call<LoadResult>('load', job(WARMUP));
  check(bench, `${scenario} ${target} (warm-up)`, warm);

  const profiling = PROFILER !== null && target !== 'direct';
  if (profiling) await PROFILER.start();
  const commitsBefore = await bench.gateway.commits();
  const providerBefore = await bench.provider.call<CpuTime>('cpu');
  const gatewayBefore = cpuNow();
  const machineBefore = machineBusyMicros();
  const loopBefore = performance.eventLoopUtilization();
  const result = await bench.load.call<LoadResult>('load', job(DURATION));
  const loop = performance.eventLoopUtilization(loopBefore);
  const machineAfter = machineBusyMicros();
  const gatewayCpu = cpuNow().micros - gatewayBefore.micros;
  const providerCpu = (await bench.provider.call<CpuTime>('cpu')).micros - providerBefore.micros;
  const otherCpu =
    machineBefore === null || machineAfter === null
      ? null
      : Math.max(0, machineAfter - machineBefore - gatewayCpu - providerCpu - result.loadCpuMicros);
  const commitsAfter = await bench.gateway.commits();
  if (profiling) console.error(`bench: profile written to ${await PROFILER.stop(`${scenario}-${model}`)}`);
  check(bench, `${scenario} ${target}`, result);

  if (target !== 'direct') {
    bench.gatewayOk += warm.ok2xx + result.ok2xx;
    bench.gatewayCutOff += 2 * CONNECTIONS;
  }
  return {
    scenario,
    target,
    result,
    gatewayCpuMicros: gatewayCpu,
    providerCpuMicros: providerCpu,
    gatewayEventLoop: loop.utilization,
    otherCpuMicros: otherCpu,
    commits: {
      transactions: commitsAfter.transactions - commitsBefore.transactions,
      charges: commitsAfter.charges - commitsBefore.charges,
    },
  };
}

async function measureProbe(
  bench: Bench,
  scenario: string,
  target: Target,
  model: BenchModel,
  count: number,
): Promise<ProbeRow> {
  const warmup = Math.max(1, Math.floor(count / 10));
  const job: ProbeJob = { ...bench.targets.request(target, model, true), count, warmup };
  const result = await bench.load.call<ProbeResult>('probe', job);
  for (const failure of result.failures.slice(0, 3)) bench.failures.push(`${scenario} ${target} probe: ${failure}`);
  if (target !== 'direct') bench.gatewayOk += count - result.failures.length;
  return { scenario, target, result };
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
  // Each answer is charged exactly once; requests cut off when a run ended may be charged without being counted by autocannon.
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
    `Accounting: ${ledger.generations.toLocaleString('en-US')} generations (${ledger.cancelled} cut off by the end of a run), ` +
    `key usage ${usd(ledger.keyUsage)} USD, account usage ${usd(ledger.accountUsage)} USD, sum of generation charges ${usd(ledger.generationsCost)} USD; ` +
    `per request ${[...charges].map(([m, c]) => `${m} ${usd(c)}`).join(', ')} USD`
  );
}

/** The `/activity` section: its own gateway and database, after the proxy runs (or alone with BENCH_ONLY=activity). */
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
  const only = process.env.BENCH_ONLY;
  if (only !== undefined && only !== '' && only !== 'activity')
    throw new Error(`BENCH_ONLY must be "activity", got "${only}"`);
  if (only === 'activity') return activitySection();
  const proxy = await proxyBench();
  const activity = await activitySection();
  return proxy || activity;
}

async function proxyBench(): Promise<number> {
  const started: { stop(): Promise<void> }[] = [];
  try {
    const provider = await startHelper('provider-process.js');
    started.push(provider);
    const load = await startHelper('load-process.js');
    started.push(load);
    const providerUrl = await provider.call<string>('start');
    const gateway = await startBenchGateway(providerUrl);
    started.push(gateway);

    const targets = targetsFor(providerUrl, gateway);
    const charges = await chargesOf(targets);
    const bench: Bench = { gateway, load, provider, targets, failures: [], gatewayOk: 0, gatewayCutOff: 0 };

    const loadBefore = loadavg()[0]!;
    if (loadBefore > 0.5)
      console.error(
        `bench: WARNING the machine is not idle (load average ${loadBefore.toFixed(2)}): other processes will skew the numbers`,
      );
    console.error(
      `bench: ${CONNECTIONS} connections, ${DURATION} s per run after ${WARMUP} s warm-up; 5 runs + TTFB probes...`,
    );
    const rows: LoadRow[] = [];
    const runs: [string, Target[], boolean][] = [
      ['non-streaming', ['direct', 'gateway', PLAIN_UPSTREAM], false],
      ['streaming', ['direct', 'gateway'], true],
    ];
    for (const [scenario, targets, stream] of runs) {
      for (const target of targets) {
        rows.push(await measureLoad(bench, scenario, target, stream));
        console.error(`bench: ${scenario} ${target} done`);
      }
    }
    const probes: ProbeRow[] = [];
    const instantCount = Math.max(50, Math.round(50 * DURATION));
    for (const target of ['direct', 'gateway'] as const)
      probes.push(await measureProbe(bench, 'instant (40 tokens)', target, 'bench/instant', instantCount));
    for (const target of ['direct', 'gateway'] as const)
      probes.push(
        await measureProbe(
          bench,
          'paced (20 tokens at 100/s)',
          target,
          'bench/paced',
          Math.max(5, Math.round(DURATION)),
        ),
      );

    const loadAfter = loadavg()[0]!;
    await gateway.quiesce();
    const accounting = checkLedger(bench, await gateway.ledger(), charges);

    console.log(`## Tollgate proxy benchmark\n`);
    console.log(
      `Node ${process.version}, ${availableParallelism()} cores. Simulated provider, gateway (embedded SQLite, synchronous=FULL) and load generator ` +
        `(autocannon, ${CONNECTIONS} keep-alive connections, closed loop) each in their own process on loopback. ` +
        `${DURATION} s per run after ${WARMUP} s of warm-up. 1-minute load average before/after: ${loadBefore.toFixed(2)}/${loadAfter.toFixed(2)} ` +
        `(the bench itself adds ~2-3). Request: 1 short user message, answer of 40 tokens; streamed as role + 40 content + finish + usage chunks + [DONE], which the provider sends in one write. ` +
        `"gateway" asks the provider for a stream even for a non-streamed request (the default \`stream_upstream: true\`); "${PLAIN_UPSTREAM}" is a provider configured to send it as one JSON request.\n`,
    );
    console.log(loadTable(rows));
    console.log('');
    for (const line of overheadLines(rows)) console.log(line);
    console.log('');
    console.log(cpuTable(rows));
    console.log('');
    console.log(`Time to first byte, one request at a time (no queueing):\n`);
    console.log(probeTable(probes));
    console.log('');
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
