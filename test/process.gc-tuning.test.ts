/**
 * The gateway's process runs without V8's allocation-site pretenuring (`tuneGarbageCollector` in
 * main.ts, called first by `startGateway`). With it, V8 sends every object of an allocation site it
 * once saw outlive scavenges straight to the old generation, where short-lived ones pile up until a
 * mark-compact: under load that was ~4 KB per request and a 10–50 ms stall every few seconds.
 *
 * The probe teaches V8 that one site makes long-lived objects (300,000 kept), then makes 10 million
 * short-lived objects at the same site and counts the mark-compacts meanwhile: without the tuning
 * there are some (3–8 on an idle machine), with it none, and an explicit command-line choice is kept.
 * Whether V8 decides to pretenure the site at all depends on when its scavenges and its concurrent
 * compiler run, so the probes that expect pretenuring get up to three runs (on a loaded machine one
 * run in a few saw no decision); the probe that expects none gets one.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, ROOT } from './helpers/process.js';

const PROBE = `
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
if (process.argv.includes('--tune')) (await import(${JSON.stringify(join(ROOT, 'dist/main.js'))})).tuneGarbageCollector();
const majors = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(entry.startTime);
}).observe({ entryTypes: ['gc'] });
function make(i) { return { id: i, name: 'n', list: [i, i + 1] }; }
const kept = [];
for (let i = 0; i < 300_000; i++) kept.push(make(i));
const ring = new Array(16);
let sum = 0;
const start = performance.now();
for (let i = 0; i < 10_000_000; i++) { ring[i & 15] = make(i); sum += ring[(i + 1) & 15]?.list.length ?? 0; }
const end = performance.now();
await new Promise((resolve) => setTimeout(resolve, 50));
process.stdout.write(JSON.stringify({ majors: majors.filter((t) => t >= start && t <= end).length, kept: kept.length, sum }));
`;

async function markCompactsWhileShortLived(nodeFlags: string[], tune: boolean): Promise<number> {
  const args = [...nodeFlags, '--input-type=module', '-e', PROBE, '--', ...(tune ? ['--tune'] : [])];
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: ROOT, timeout: 60_000 });
  return (JSON.parse(stdout) as { majors: number }).majors;
}

/** The most mark-compacts of up to three probe runs (stops at the first run that saw some). */
async function markCompactsInSomeRun(nodeFlags: string[], tune: boolean): Promise<number> {
  let most = 0;
  for (let run = 0; run < 3 && most === 0; run++)
    most = Math.max(most, await markCompactsWhileShortLived(nodeFlags, tune));
  return most;
}

describe('garbage collector tuning', { timeout: 180_000 }, () => {
  beforeAll(() => buildOnce(), 180_000);

  it('without it, short-lived objects of a site V8 pretenured fill the old generation (the probe sees it)', async () => {
    expect(await markCompactsInSomeRun([], false)).toBeGreaterThan(0);
  });

  it('with it, they die young: no mark-compact', async () => {
    expect(await markCompactsWhileShortLived([], true)).toBe(0);
  });

  it('leaves an explicit --allocation-site-pretenuring on the command line as it is', async () => {
    expect(await markCompactsInSomeRun(['--allocation-site-pretenuring'], true)).toBeGreaterThan(0);
  });
});
