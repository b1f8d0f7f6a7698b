/**
 * The embedded store's disk filling up (issue 11, item 5): on a private tmpfs as TOLLGATE_DATA_DIR,
 * headroom under `billing.journal.min_free_bytes`, and then a disk with no space at all, make
 * `/readyz` 503 and refuse paid requests before anything is forwarded; freeing space recovers by
 * itself. The headroom is reported at boot (log) and as a metric.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { fixedBody, fixedCostModel } from './helpers/holds.js';
import { metric, readyz, until } from './helpers/journal.js';
import { adminClient, buildOnce, type ServeProcess, startServe, waitForOutput } from './helpers/process.js';

const run = promisify(execFile);
const ADMIN = 'admin-token-for-disk-tests-01';
const FIXED = fixedCostModel('test/fixed', 'mock-chat');
const MIN_FREE = 2 * 1024 * 1024;

const adminCall = adminClient(ADMIN);

async function freeBytes(path: string): Promise<number> {
  const stats = await statfs(path);
  return Number(stats.bavail) * Number(stats.bsize);
}

/** Writes zeros into `path` until `leave` bytes are free (0: until the disk refuses). */
async function fill(path: string, mountPoint: string, leave: number): Promise<void> {
  const handle = await open(path, 'a');
  try {
    const block = Buffer.alloc(64 * 1024);
    for (;;) {
      const free = await freeBytes(mountPoint);
      if (free <= leave) return;
      try {
        await handle.write(block, 0, Math.min(block.length, Math.max(4096, free - leave)));
      } catch {
        return; // ENOSPC: full
      }
    }
  } finally {
    await handle.close();
  }
}

describe('embedded store on a disk that fills up', { timeout: 120_000 }, () => {
  let provider: MockProvider;
  let dir: string;
  let mountPoint: string;
  let mounted = false;
  let gateway: ServeProcess | null = null;

  beforeAll(async () => {
    const built = buildOnce();
    [provider, dir] = await Promise.all([startMockProvider(), mkdtemp(join(tmpdir(), 'tollgate-disk-'))]);
    mountPoint = join(dir, 'data');
    await mkdir(mountPoint);
    await run('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tollgate-test', mountPoint]);
    mounted = true;
    await built;
  }, 180_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    if (mounted) await run('umount', ['-l', mountPoint]).catch(() => undefined);
    await provider?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('low headroom, then no space: /readyz 503 and paid requests refused before forwarding; freeing space recovers', async () => {
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(
      configPath,
      stringify({
        providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
        models: [FIXED],
        limits: { edge: { burst: 0 } },
        billing: { journal: { min_free_bytes: MIN_FREE } },
      }),
    );
    gateway = await startServe(
      {
        TOLLGATE_CONFIG: configPath,
        TOLLGATE_DATA_DIR: mountPoint,
        TOLLGATE_ADMIN_TOKEN: ADMIN,
        TOLLGATE_LOG_LEVEL: 'info',
      },
      90_000,
    );
    const url = gateway.url;
    await waitForOutput(gateway, /"free_bytes":\d+.*data directory headroom/);
    expect(await metric(url, 'tollgate_data_dir_free_bytes')).toBeGreaterThan(MIN_FREE);
    const account = await adminCall(url, 'POST', '/accounts', {
      email: `disk-${randomBytes(3).toString('hex')}@example.test`,
    });
    const accountId = account.data.id as string;
    await adminCall(url, 'POST', `/accounts/${accountId}/credits`, { amount: 1, kind: 'grant' });
    const key = (await adminCall(url, 'POST', `/accounts/${accountId}/keys`, { name: 'disk' })).key as string;
    const paid = async (i: number) => {
      const response = await request(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(fixedBody(FIXED.id, i)),
      });
      return { status: response.statusCode, json: (await response.body.json()) as any };
    };
    expect((await paid(0)).status).toBe(200);

    // 1. Headroom under min_free_bytes.
    const ballast = join(mountPoint, 'ballast');
    await fill(ballast, mountPoint, MIN_FREE / 2);
    await until(
      async () => (await readyz(url)).json.reasons?.includes('disk_low') === true,
      20_000,
      'disk_low reported',
    );
    expect((await readyz(url)).status).toBe(503);
    let before = provider.stats.requests;
    const low = await paid(1);
    expect(low.status).toBe(503);
    expect(low.json.error.metadata.reason).toBe('disk_low');
    expect(provider.stats.requests).toBe(before);

    // 2. No space at all: the journal's own writes fail.
    await fill(join(mountPoint, 'ballast-2'), mountPoint, 0);
    await until(
      async () => (await readyz(url)).json.reasons?.includes('journal_unwritable') === true,
      20_000,
      'journal_unwritable reported',
    );
    before = provider.stats.requests;
    expect((await paid(2)).status).toBe(503);
    expect(provider.stats.requests).toBe(before);
    expect(await metric(url, 'tollgate_charge_journal_writable')).toBe(0);

    // 3. Space freed: back by itself.
    await rm(ballast);
    await rm(join(mountPoint, 'ballast-2'));
    await until(async () => (await readyz(url)).status === 200, 20_000, 'ready again');
    expect((await paid(3)).status).toBe(200);
    const accountInfo = await adminCall(url, 'GET', `/accounts/${accountId}`);
    expect(Math.round(accountInfo.data.total_usage * 1e9)).toBe(2_000_000); // requests 0 and 3, nothing else
    expect(gateway.child.exitCode).toBeNull();
  });
});
