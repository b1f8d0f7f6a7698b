/**
 * BENCH_PROFILE=<dir>: V8 CPU profiles of the proxies under test during their measured runs — the
 * gateway (this process) and the bare proxy (its helper process, through the helpers' built-in
 * `profileStart` / `profileStop` calls) — written as <dir>/<section>-<target>[-<round>].cpuprofile
 * (open them in Chrome DevTools or speedscope). Side by side, the two show where the gateway's extra
 * CPU goes: what the bare proxy spends too (Node's HTTP machinery, undici, the socket writes) and
 * what is the gateway's own.
 *
 * A sampled profile counts wall time on the main thread: a thread descheduled inside a syscall (a
 * loopback `writev` that wakes its reader) is charged to it, and the garbage collector's and the
 * store's own threads are not in it — compare the two profiles' shares, and take CPU from the bench.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

export interface Profiler {
  start(): Promise<void>;
  /** Stops and writes the profile; returns its path. */
  stop(name: string): Promise<string>;
}

/** Sampling interval, microseconds. */
const INTERVAL_US = 200;

let session: Session | null = null;

function post<T>(method: string, params: object = {}): Promise<T> {
  if (session === null) {
    session = new Session();
    session.connect();
  }
  const connected = session;
  return new Promise<T>((resolve, reject) =>
    connected.post(method, params, (error, result) => (error ? reject(error) : resolve(result as T))),
  );
}

/** Starts sampling this process's main thread. */
export async function startCpuProfile(): Promise<void> {
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: INTERVAL_US });
  await post('Profiler.start');
}

/** Stops sampling and writes the profile to `path` (JSON, the `.cpuprofile` format). */
export async function stopCpuProfile(path: string): Promise<string> {
  const { profile } = await post<{ profile: unknown }>('Profiler.stop');
  writeFileSync(path, JSON.stringify(profile));
  return path;
}

function pathFor(dir: string, name: string): string {
  return join(dir, `${name.replace(/[^a-z0-9-]+/gi, '-')}.cpuprofile`);
}

/** Profiles of this process (the gateway). */
export function createProfiler(dir: string): Profiler {
  mkdirSync(dir, { recursive: true });
  return { start: startCpuProfile, stop: (name) => stopCpuProfile(pathFor(dir, name)) };
}

/** Profiles of a helper process (the bare proxy), taken in that process and written by it. */
export function helperProfiler(dir: string, helper: { call<R>(name: string, args?: unknown): Promise<R> }): Profiler {
  mkdirSync(dir, { recursive: true });
  return {
    start: () => helper.call<void>('profileStart'),
    stop: (name) => helper.call<string>('profileStop', pathFor(dir, name)),
  };
}
