/**
 * A private PostgreSQL server for outage tests: its own data directory and port, so a test may stop
 * and start it at will (the shared server on 5432 must never be touched). `destroy()` always stops it
 * and removes the directory; call it in `afterAll`.
 */
import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const BIN = '/usr/lib/postgresql/15/bin';
const run = promisify(execFile);

export interface PrivatePostgres {
  url: string;
  port: number;
  start(): Promise<void>;
  /** Fast shutdown: connections are terminated, as in a restart or failover. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function asPostgres(args: string[]): Promise<void> {
  await run('runuser', ['-u', 'postgres', '--', ...args], { timeout: 120_000 });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-pg-'));
  const { uid, gid } = await stat('/var/lib/postgresql'); // the postgres user's ids
  await chown(dir, uid, gid);
  const data = join(dir, 'data');
  const port = await freePort();
  let running = false;
  const pgctl = (action: string[]) => asPostgres([`${BIN}/pg_ctl`, '-D', data, ...action]);
  const pg: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pgctl([
        '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
        '-l',
        join(dir, 'log'),
        '-w',
        'start',
      ]);
      running = true;
    },
    async stop() {
      await pgctl(['-m', 'fast', '-w', 'stop']);
      running = false;
    },
    async destroy() {
      if (running) await pg.stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await asPostgres([`${BIN}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres']);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return pg;
}
