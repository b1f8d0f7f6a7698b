/**
 * A private Redis server for outage tests: its own port and directory, so a test may stop it and start
 * it again (empty, as a restart without persistence leaves it) while the shared server on 6379 is never
 * touched. `destroy()` always stops it and removes the directory; call it in `afterAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './private-pg.js';

export interface PrivateRedis {
  url: string;
  start(): Promise<void>;
  /** Kills the server (SIGKILL): connections drop and, without persistence, the data is gone. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const redis: PrivateRedis = {
    url,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        { stdio: 'ignore' },
      );
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => undefined); // refused while the server starts: retried below
      try {
        for (let i = 0; ; i++) {
          try {
            if (client.status !== 'ready') await client.connect();
            await client.ping();
            return;
          } catch (error) {
            if (i > 100) throw error;
            client.disconnect();
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      } finally {
        client.disconnect();
      }
    },
    async stop() {
      const running = child;
      child = null;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
    async destroy() {
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await redis.start();
  return redis;
}
