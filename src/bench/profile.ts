/**
 * BENCH_PROFILE=<dir>: a V8 CPU profile of the gateway (this process) during each measured gateway
 * run, written as <dir>/<scenario>-gateway.cpuprofile (open in Chrome DevTools or speedscope).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

export interface Profiler {
  start(): Promise<void>;
  /** Stops and writes the profile; returns its path. */
  stop(name: string): Promise<string>;
}

export function createProfiler(dir: string): Profiler {
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params: object = {}) =>
    new Promise<T>((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as T))),
    );
  return {
    async start() {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 200 });
      await post('Profiler.start');
    },
    async stop(name) {
      const { profile } = await post<{ profile: unknown }>('Profiler.stop');
      const path = join(dir, `${name.replace(/[^a-z0-9-]+/gi, '-')}.cpuprofile`);
      writeFileSync(path, JSON.stringify(profile));
      return path;
    },
  };
}
