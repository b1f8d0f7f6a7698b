/** Markdown tables of the benchmark's results. */
import type { CommitCount } from './bench-gateway.js';
import type { LoadResult, ProbeResult } from './measure.js';

/** The gateway through a provider with `stream_upstream: false` (non-streamed requests stay JSON upstream). */
export const PLAIN_UPSTREAM = 'gateway, plain upstream';
export type Target = 'direct' | 'gateway' | typeof PLAIN_UPSTREAM;

export interface LoadRow {
  scenario: string;
  target: Target;
  result: LoadResult;
  /** CPU spent during the measured run, microseconds. */
  gatewayCpuMicros: number;
  providerCpuMicros: number;
  /** Share of wall time the gateway's event loop was busy (0..1). */
  gatewayEventLoop: number;
  /** CPU that processes outside the benchmark used meanwhile (null: unknown). */
  otherCpuMicros: number | null;
  /** The settler's store transactions during the measured run. */
  commits: CommitCount;
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
const int = (value: number) => Math.round(value).toLocaleString('en-US');
const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;

export function loadTable(rows: readonly LoadRow[]): string {
  return table(
    ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'errors/non-2xx'],
    ['l', 'l', 'r', 'r', 'r', 'r'],
    rows.map(({ scenario, target, result: r }) => [
      scenario,
      target,
      int(r.requestsPerSec),
      ms(r.p50Ms),
      ms(r.p99Ms),
      `${r.errors}/${r.non2xx}`,
    ]),
  );
}

/** One line per scenario: what going through the gateway adds. */
export function overheadLines(rows: readonly LoadRow[]): string[] {
  const lines: string[] = [];
  for (const scenario of new Set(rows.map((r) => r.scenario))) {
    const direct = rows.find((r) => r.scenario === scenario && r.target === 'direct')?.result;
    if (!direct) continue;
    for (const row of rows.filter((r) => r.scenario === scenario && r.target !== 'direct')) {
      const gateway = row.result;
      lines.push(
        `Gateway overhead, ${scenario}${row.target === 'gateway' ? '' : ` (${row.target})`}: p50 ${signed(gateway.p50Ms - direct.p50Ms)} ms, ` +
          `p99 ${signed(gateway.p99Ms - direct.p99Ms)} ms; throughput ${((100 * gateway.requestsPerSec) / direct.requestsPerSec).toFixed(1)} % of direct`,
      );
    }
  }
  return lines;
}

export function cpuTable(rows: readonly LoadRow[]): string {
  const perRequest = (micros: number, r: LoadResult) => (r.completed > 0 ? int(micros / r.completed) : 'n/a');
  return table(
    [
      'scenario',
      'target',
      'gateway CPU µs/req',
      'gateway event loop busy',
      'charges per commit',
      'provider CPU µs/req',
      'load generator CPU µs/req',
      'other processes (cores)',
    ],
    ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows.map((row) => [
      row.scenario,
      row.target,
      row.target !== 'direct' ? perRequest(row.gatewayCpuMicros, row.result) : '–',
      row.target !== 'direct' ? `${(100 * row.gatewayEventLoop).toFixed(0)} %` : '–',
      row.target !== 'direct' && row.commits.transactions > 0
        ? (row.commits.charges / row.commits.transactions).toFixed(1)
        : '–',
      perRequest(row.providerCpuMicros, row.result),
      perRequest(row.result.loadCpuMicros, row.result),
      row.otherCpuMicros === null ? 'n/a' : (row.otherCpuMicros / (row.result.durationSec * 1e6)).toFixed(2),
    ]),
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
