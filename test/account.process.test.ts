/**
 * The operator's and the new user's view of sign-in, through the built `tollgate` process: demo mode
 * prints the dashboard URL, e-mail and a generated password once (never logged), and the CLI sets
 * passwords from standard input.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, buildOnce, ROOT, startServe } from './helpers/process.js';

async function signIn(url: string, email: string, password: string): Promise<number> {
  const response = await request(`${url}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  await response.body.dump();
  return response.statusCode;
}

/** The CLI with `input` on standard input. */
function cli(
  args: string[],
  env: Record<string, string>,
  input: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
    child.stdin!.end(input);
  });
}

async function waitFor(read: () => string, pattern: RegExp): Promise<RegExpExecArray> {
  for (let i = 0; i < 100; i++) {
    const match = pattern.exec(read());
    if (match) return match;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never printed ${pattern}:\n${read()}`);
}

describe('sign-in from the command line (process)', { timeout: 90_000 }, () => {
  let dir: string;
  beforeAll(async () => {
    await buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-signin-'));
  }, 120_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('demo mode prints the dashboard URL, the demo e-mail and a password once; they sign in; the password is never logged', async () => {
    const dataDir = join(dir, 'demo');
    const first = await startServe({ TOLLGATE_DATA_DIR: dataDir, TOLLGATE_LOG_LEVEL: 'debug' });
    let password: string;
    try {
      const [, email] = await waitFor(first.stdout, /e-mail: +(\S+)/);
      [, password] = (await waitFor(first.stdout, /password: +(\S+)/)) as unknown as [string, string];
      expect(first.stdout()).toContain(`  ${first.url}/\n`);
      expect(email).toBe('demo@tollgate.local');
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect(await signIn(first.url, email!, password)).toBe(200);
      expect(await signIn(first.url, email!, `${password}x`)).toBe(401);
      const logs = first
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'));
      expect(logs.length).toBeGreaterThan(0);
      expect(logs.join('\n')).not.toContain(password);
      expect(first.stderr()).not.toContain(password);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    const second = await startServe({ TOLLGATE_DATA_DIR: dataDir });
    try {
      await waitFor(second.stdout, /already exists/);
      expect(second.stdout()).not.toContain(password);
      expect(second.stdout()).not.toMatch(/password: /);
      expect(await signIn(second.url, 'demo@tollgate.local', password)).toBe(200);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it('tollgate accounts create --password-stdin and accounts set-password --password-stdin', async () => {
    const adminToken = 'admin-token-for-tests-0001';
    const gw = await startServe({
      TOLLGATE_DATA_DIR: join(dir, 'cli'),
      TOLLGATE_ADMIN_TOKEN: adminToken,
      TOLLGATE_LOG_LEVEL: 'warn',
    });
    const env = { TOLLGATE_ADMIN_TOKEN: adminToken, TOLLGATE_URL: gw.url };
    try {
      const created = await cli(
        ['accounts', 'create', '--email', 'ana@example.test', '--password-stdin', '--json'],
        env,
        'first password here\n',
      );
      expect(created.code, created.stderr).toBe(0);
      const id = JSON.parse(created.stdout).data.id as string;
      expect(created.stdout).not.toContain('first password here');
      expect(await signIn(gw.url, 'ana@example.test', 'first password here')).toBe(200);

      const weak = await cli(['accounts', 'set-password', '--account', id, '--password-stdin'], env, 'short\n');
      expect(weak.code).not.toBe(0);
      expect(weak.stderr).toMatch(/at least 10 characters/);
      const empty = await cli(['accounts', 'set-password', '--account', id, '--password-stdin'], env, '');
      expect(empty.code).toBe(2);
      const noFlag = await cli(['accounts', 'set-password', '--account', id], env, 'ignored password\n');
      expect(noFlag.code).toBe(2);

      const set = await cli(
        ['accounts', 'set-password', '--account', id, '--password-stdin'],
        env,
        'second password here\r\n',
      );
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toContain('password set');
      expect(await signIn(gw.url, 'ana@example.test', 'first password here')).toBe(401);
      expect(await signIn(gw.url, 'ana@example.test', 'second password here')).toBe(200);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });
});
