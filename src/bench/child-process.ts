/**
 * The benchmark's helper processes (simulated provider, load generator) and the request/reply
 * protocol over their IPC channel. Separate processes, not worker threads, so that
 * `process.cpuUsage()` in the orchestrator counts the gateway alone.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startCpuProfile, stopCpuProfile } from './profile.js';

export interface CpuTime {
  /** user + system, microseconds */
  micros: number;
}

export interface IpcRequest<T = unknown> {
  id: number;
  call: string;
  args: T;
}

export type IpcReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

export interface HelperProcess {
  call<R>(name: string, args?: unknown): Promise<R>;
  stop(): Promise<void>;
}

/** Forks `dist/bench/<module>` and waits for its `{ ready: true }` message. */
export async function startHelper(module: string): Promise<HelperProcess> {
  const path = fileURLToPath(new URL(`./${module}`, import.meta.url));
  const child: ChildProcess = fork(path, [], {
    execArgv: ['--enable-source-maps'],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let exited = false;

  child.on('message', (message: IpcReply) => {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(new Error(`${module}: ${message.error}`));
  });
  child.on('exit', (code, signal) => {
    exited = true;
    for (const waiter of pending.values())
      waiter.reject(new Error(`${module} exited (code ${code}, signal ${signal})`));
    pending.clear();
  });

  const helper: HelperProcess = {
    call<R>(name: string, args: unknown = null): Promise<R> {
      if (exited) return Promise.reject(new Error(`${module} is not running`));
      const id = nextId++;
      return new Promise<R>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, call: name, args } satisfies IpcRequest);
      });
    },
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await gone;
    },
  };
  await helper.call('ready');
  return helper;
}

/** The child's side: answers calls with the handlers given; `ready` and `cpu` are built in. */
export function serveHelper(handlers: Record<string, (args: never) => unknown>): void {
  const all: Record<string, (args: never) => unknown> = {
    ready: () => true,
    cpu: (): CpuTime => cpuNow(),
    profileStart: () => startCpuProfile(),
    profileStop: (path: string) => stopCpuProfile(path),
    ...handlers,
  };
  process.on('message', (message: IpcRequest) => {
    const handler = all[message.call];
    const reply = (value: IpcReply) => process.send?.(value);
    if (!handler) {
      reply({ id: message.id, ok: false, error: `unknown call ${message.call}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.args as never))
      .then(
        (value) => reply({ id: message.id, ok: true, value }),
        (error: unknown) =>
          reply({
            id: message.id,
            ok: false,
            error: error instanceof Error ? (error.stack ?? error.message) : String(error),
          }),
      );
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

export function cpuNow(): CpuTime {
  const usage = process.cpuUsage();
  return { micros: usage.user + usage.system };
}
