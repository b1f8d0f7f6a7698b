/** Markdown tables of the benchmark's results. */
import type { CommitCount } from './bench-gateway.js';
import type { LoadResult, OpenLoopResult, ProbeResult, StreamLoadResult } from './measure.js';

export const DIRECT = 'direct to the provider';
export const BARE = 'bare proxy';
/** The gateway through a provider with `stream_upstream: false` (non-streamed requests stay JSON upstream). */
export const PLAIN = 'gateway, plain upstream';
/** The gateway with its defaults: a non-streamed request is served from an upstream stream. */
export const GATEWAY = 'gateway';
export type Target = typeof DIRECT | typeof BARE | typeof PLAIN | typeof GATEWAY;

export interface ThroughputRow {
  target: Target;
  rounds: LoadResult[];
  /** The proxy's CPU over the measured rounds, microseconds, and the requests they completed. */
  cpuMicros: number;
  completed: number;
  /** The settler's store transactions during the measured rounds (gateway targets). */
  commits: CommitCount;
}

export interface LatencyRound {
  result: OpenLoopResult;
  /** The gateway's event-loop delay during the run, and the pauses of its mark-compacts (gateway targets). */
  gatewayLoop: { p99Ms: number; maxMs: number; markCompacts: number[] } | null;
  /** How long the gateway's answers waited for their charges to be durable (gateway targets). */
  settleWait: { meanMs: number; over5msShare: number } | null;
}

/** One target's interleaved rounds (round i of every target ran in the same stretch of time). */
export interface LatencyRow {
  target: Target;
  rounds: LatencyRound[];
}

export interface StreamRound {
  result: StreamLoadResult;
  /** The proxy's CPU during the run; null for direct. */
  cpuMicros: number | null;
}

export interface StreamRow {
  target: Target;
  rounds: StreamRound[];
}

export interface MemoryRow {
  streams: number;
  rssBefore: number;
  rssOpen: number;
  heapOpen: number;
  openSec: number;
  /** HTTP/2 connections the gateway opened to the provider for them. */
  upstreamConnections: number;
}

export interface ProbeRow {
  scenario: string;
  target: Target;
  result: ProbeResult;
}

function table(header: string[], align: ('l' | 'r')[], rows: string[][]): string {
  const lines = [`| ${header.join(' | ')} |`, `|${align.map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

const ms = (value: number) => (Number.isNaN(value) ? 'n/a' : value.toFixed(2));
const int = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const signed = (value: number) => (Number.isNaN(value) ? 'n/a' : `${value >= 0 ? '+' : ''}${value.toFixed(2)}`);
const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Each round's figure minus the provider's own in the same round (NaN without one). */
function minusDirect<R>(
  rounds: readonly { result: R }[],
  direct: readonly { result: R }[] | undefined,
  pick: (result: R) => number,
): number[] {
  return rounds.map((r, i) => {
    const base = direct?.[i]?.result;
    return base === undefined ? Number.NaN : pick(r.result) - pick(base);
  });
}

export function throughputTable(rows: readonly ThroughputRow[]): string {
  const rate = (row: ThroughputRow) => median(row.rounds.map((r) => r.requestsPerSec));
  const cpu = (row: ThroughputRow) => row.cpuMicros / Math.max(1, row.completed);
  const bare = rows.find((r) => r.target === BARE);
  return table(
    [
      'target',
      'req/s (median)',
      'of bare proxy',
      'CPU µs/req',
      'CPU vs bare proxy',
      'p50 ms',
      'p99 ms',
      'charges per commit',
      'errors/non-2xx',
    ],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows.map((row) => [
      row.target,
      int(rate(row)),
      bare ? ratio(rate(row) / rate(bare)) : 'n/a',
      int(cpu(row)),
      bare ? ratio(cpu(row) / cpu(bare)) : 'n/a',
      ms(median(row.rounds.map((r) => r.p50Ms))),
      ms(median(row.rounds.map((r) => r.p99Ms))),
      row.commits.transactions > 0 ? (row.commits.charges / row.commits.transactions).toFixed(1) : '–',
      `${row.rounds.reduce((n, r) => n + r.errors, 0)}/${row.rounds.reduce((n, r) => n + r.non2xx, 0)}`,
    ]),
  );
}

/** "0 / 2 / 1 (14.2)": each round's count, and the longest pause of them all. */
function compactions(rounds: readonly number[][]): string {
  const longest = Math.max(0, ...rounds.flat());
  return `${rounds.map((r) => r.length).join(' / ')}${longest > 0 ? ` (${ms(longest)})` : ''}`;
}

export function latencyTable(rows: readonly LatencyRow[]): string {
  const direct = rows.find((r) => r.target === DIRECT);
  const of = (row: LatencyRow, pick: (r: OpenLoopResult) => number) => median(row.rounds.map((r) => pick(r.result)));
  const added = (row: LatencyRow, pick: (r: OpenLoopResult) => number) => minusDirect(row.rounds, direct?.rounds, pick);
  const loops = (row: LatencyRow) => row.rounds.flatMap((r) => (r.gatewayLoop ? [r.gatewayLoop] : []));
  const waits = (row: LatencyRow) => row.rounds.flatMap((r) => (r.settleWait ? [r.settleWait] : []));
  return table(
    [
      'target',
      'requests',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'max ms',
      'added p50 ms',
      'added p99 ms',
      'added p99 per round, ms',
      'gateway event-loop delay p99 / max ms',
      'gateway mark-compacts per round (longest ms)',
      'settle wait mean ms / share over 5 ms',
    ],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows.map((row) => {
      const isDirect = row.target === DIRECT || !direct;
      const loop = loops(row);
      const wait = waits(row);
      return [
        row.target,
        `${int(row.rounds.reduce((n, r) => n + r.result.ok, 0))} of ${int(row.rounds.reduce((n, r) => n + r.result.sent, 0))}`,
        ms(of(row, (r) => r.p50Ms)),
        ms(of(row, (r) => r.p90Ms)),
        ms(of(row, (r) => r.p99Ms)),
        ms(Math.max(...row.rounds.map((r) => r.result.maxMs))),
        isDirect ? '–' : signed(median(added(row, (r) => r.p50Ms))),
        isDirect ? '–' : signed(median(added(row, (r) => r.p99Ms))),
        isDirect
          ? '–'
          : added(row, (r) => r.p99Ms)
              .map(signed)
              .join(' / '),
        loop.length > 0
          ? `${ms(median(loop.map((l) => l.p99Ms)))} / ${ms(Math.max(...loop.map((l) => l.maxMs)))}`
          : '–',
        loop.length > 0 ? compactions(loop.map((l) => l.markCompacts)) : '–',
        wait.length > 0
          ? `${ms(median(wait.map((w) => w.meanMs)))} / ${(100 * median(wait.map((w) => w.over5msShare))).toFixed(1)} %`
          : '–',
      ];
    }),
  );
}

export function streamTable(rows: readonly StreamRow[]): string {
  const direct = rows.find((r) => r.target === DIRECT);
  const of = (row: StreamRow, pick: (r: StreamLoadResult) => number) => median(row.rounds.map((r) => pick(r.result)));
  /** The proxy's CPU over all its rounds per stream they completed (as the throughput table counts it). */
  const perStream = (row: StreamRow) => {
    const cpu = row.rounds.reduce<number | null>((n, r) => (r.cpuMicros === null ? null : (n ?? 0) + r.cpuMicros), 0);
    return cpu === null
      ? Number.NaN
      : cpu /
          Math.max(
            1,
            row.rounds.reduce((n, r) => n + r.result.streams, 0),
          );
  };
  const perRound = (row: StreamRow) =>
    row.rounds.map((r) => (r.cpuMicros === null ? Number.NaN : r.cpuMicros / Math.max(1, r.result.streams)));
  const bare = rows.find((r) => r.target === BARE);
  return table(
    [
      'target',
      'streams/s',
      'first token p50 ms',
      'first token p99 ms',
      'added first token p50 ms',
      'stream p50 ms',
      'CPU µs/stream',
      'CPU vs bare proxy',
      'CPU vs bare proxy per round',
    ],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows.map((row) => {
      const addedTtft = minusDirect(row.rounds, direct?.rounds, (r) => r.ttftP50Ms);
      const noCpu = Number.isNaN(perStream(row)) || !bare;
      const bareRounds = bare ? perRound(bare) : [];
      return [
        row.target,
        int(of(row, (r) => r.streamsPerSec)),
        ms(of(row, (r) => r.ttftP50Ms)),
        ms(of(row, (r) => r.ttftP99Ms)),
        row.target === DIRECT || !direct ? '–' : signed(median(addedTtft)),
        ms(of(row, (r) => r.totalP50Ms)),
        Number.isNaN(perStream(row)) ? '–' : int(perStream(row)),
        noCpu ? '–' : ratio(perStream(row) / perStream(bare)),
        noCpu
          ? '–'
          : perRound(row)
              .map((cpu, i) => ratio(cpu / (bareRounds[i] ?? Number.NaN)))
              .join(' / '),
      ];
    }),
  );
}

export function memoryTable(row: MemoryRow): string {
  return table(
    [
      'open streams',
      'gateway RSS before, MiB',
      'RSS with the streams open, MiB',
      'per stream, KiB',
      'JS heap used, MiB',
      'time to open them, s',
      'upstream connections (HTTP/2)',
    ],
    ['r', 'r', 'r', 'r', 'r', 'r', 'r'],
    [
      [
        int(row.streams),
        mib(row.rssBefore),
        mib(row.rssOpen),
        row.streams > 0 ? ((row.rssOpen - row.rssBefore) / row.streams / 1024).toFixed(1) : 'n/a',
        mib(row.heapOpen),
        row.openSec.toFixed(1),
        int(row.upstreamConnections),
      ],
    ],
  );
}

export function probeTable(rows: readonly ProbeRow[]): string {
  return table(
    ['stream', 'target', 'requests', 'TTFB p50 ms', 'TTFB p99 ms', 'total p50 ms'],
    ['l', 'l', 'r', 'r', 'r', 'r'],
    rows.map(({ scenario, target, result: r }) => [
      scenario,
      target,
      String(r.measured),
      ms(r.ttfbP50Ms),
      ms(r.ttfbP99Ms),
      ms(r.totalP50Ms),
    ]),
  );
}
