/**
 * Whole-machine CPU time from /proc/stat (Linux), so a run can say how much CPU processes other than
 * the benchmark's own took meanwhile: on a shared box that is the first suspect for odd numbers.
 */
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node runs on

/** Busy CPU time of all cores, microseconds; null where /proc/stat is unavailable. */
export function machineBusyMicros(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    // irq and softirq are left out: on loopback they are mostly the benchmark's own network traffic,
    // which no process is charged for. steal counts: another VM took the core.
    const [user, nice, system, , , , , steal] = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = [user, nice, system, steal].reduce<number>((sum, v) => sum + (v ?? 0), 0);
    return Number.isFinite(busy) ? (busy * 1e6) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}
