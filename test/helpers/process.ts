/** Runs the built `tollgate` command as a real process, as an operator would. */
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { request } from 'undici';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = `${ROOT}bin/tollgate.js`;

let built: Promise<void> | undefined;

/** `npm run build` once per test run (not per test file), so the CLI under test is the current source. */
export function buildOnce(): Promise<void> {
  built ??= buildOncePerRun();
  return built;
}

/**
 * Test files run in separate worker processes of one vitest run (one parent pid). Each building on
 * its own cost ~10 s of CPU per file, and a `tsc` rewriting dist/ while another file's gateway
 * starts from it crashes that gateway. So the first worker builds under an exclusive lock directory
 * and the others wait for its stamp. The lock is keyed by the run and the newest source mtime, so a
 * watch-mode rerun after an edit builds again.
 */
async function buildOncePerRun(): Promise<void> {
  const lock = join(tmpdir(), `tollgate-test-build-${process.ppid}-${newestSourceMtime()}`);
  const stamp = join(lock, 'result');
  try {
    await mkdir(lock);
  } catch {
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      const result = await readFile(stamp, 'utf8').catch(() => null);
      if (result === 'ok') return;
      if (result !== null) throw new Error(`the build failed in another test worker:\n${result}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error('timed out waiting for another test worker to build');
  }
  try {
    await promisify(execFile)('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT });
    await writeFile(stamp, 'ok');
  } catch (error) {
    await writeFile(stamp, String(error).slice(0, 4000) || 'failed');
    throw error;
  }
}

function newestSourceMtime(): number {
  let newest = 0;
  for (const entry of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return Math.floor(newest);
}

export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * A test's process never uses the checkout's own `./data` (the default TOLLGATE_DATA_DIR): its
 * charge journal slots would be adopted by a developer's `npm start` (and the reverse). Without a
 * TOLLGATE_DATA_DIR of the test's own, the process gets a fresh one, removed when it exits.
 */
function privateDataDir(env: Record<string, string>): { env: Record<string, string>; cleanup: () => void } {
  if (env.TOLLGATE_DATA_DIR !== undefined) return { env, cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-process-'));
  return {
    env: { ...env, TOLLGATE_DATA_DIR: dir },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function startServe(given: Record<string, string>, timeoutMs = 20_000): Promise<ServeProcess> {
  const { env, cleanup } = privateDataDir(given);
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', HOST: '127.0.0.1', ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      cleanup();
      resolve(code);
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway did not start in time\nstdout:\n${out}\nstderr:\n${err}`)),
      timeoutMs,
    );
    const check = () => {
      const match = /Tollgate listening on (http:\/\/[^\s]+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function runCli(
  args: string[],
  given: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { env, cleanup } = privateDataDir(given);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => {
        cleanup();
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Polls `/readyz` until it says `ready`. With REDIS_URL a fleet starts `degraded` (resyncing) for a
 * few seconds after its Redis epoch begins (docs/architecture.md, "Redis outages").
 */
export async function waitReady(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const body = await fetch(`${url}/readyz`)
      .then((r) => r.json() as Promise<{ status?: string }>)
      .catch(() => null);
    if (body?.status === 'ready') return;
    if (Date.now() > deadline) throw new Error(`${url} not ready within ${timeoutMs} ms: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Log lines and the banner reach the pipe independently: wait for a line instead of assuming it came first. */
export async function waitForOutput(gw: ServeProcess, pattern: RegExp, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(gw.stdout()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!pattern.test(gw.stdout()))
    throw new Error(`no output matching ${pattern} within ${timeoutMs} ms:\n${gw.stdout().slice(-2000)}`);
}

/** The admin API of a running gateway, as a test calls it: the JSON answer, or an error naming the status. */
export function adminClient(token: string) {
  return async (url: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> => {
    const response = await request(`${url}/api/v1/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.body.json()) as any;
    if (response.statusCode >= 300)
      throw new Error(`${method} ${path}: ${response.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
}
