/**
 * The gateway under test, in the orchestrator's process and through the production composition root
 * (`startGateway`): embedded SQLite in a temp dir, silent logger, models on the simulator. The
 * account and key are made through the same pipeline functions the admin API calls.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Histogram } from 'prom-client';
import { stringify } from 'yaml';
import { startGateway, type RunningGateway } from '../main.js';
import { usagePeriods } from '../core/usage-window.js';
import { addCredits, createAccount } from '../pipeline/accounts.js';
import { createKey } from '../pipeline/key-management.js';
import { openSqliteDriver } from '../store/sqlite-driver.js';

/** Gateway model id → provider and upstream model name, which is a mock script (see providers/mock/script.ts). */
export const BENCH_MODELS = {
  /** No latency, no pacing: the whole answer (40 tokens; streamed, 44 SSE events) in one write, so the gateway's own cost shows. */
  'bench/instant': { provider: 'sim', upstream: 'mock@tps=0' },
  /** The same through a provider with `stream_upstream: false`: a non-streamed request stays one JSON request upstream. */
  'bench/instant-plain': { provider: 'sim-plain', upstream: 'mock@tps=0' },
  /** 20 tokens at 100 tokens/s: shows that chunks are relayed as they come, not buffered. */
  'bench/paced': { provider: 'sim', upstream: 'mock@tps=100,tokens=20' },
  /** 50 tokens at 200 tokens/s, one write each: the streaming section's streams. */
  'bench/stream50': { provider: 'sim', upstream: 'mock@tps=200,tokens=50' },
  /** A token every 5 s (inside the 10 s idle limit) for 1,000 s. */
  'bench/slow': { provider: 'sim', upstream: 'mock@tps=0.2,tokens=200' },
  /** The same from the simulator speaking h2c (`http2: true`): the streams the memory section holds open. */
  'bench/slow-h2': { provider: 'sim-h2', upstream: 'mock@tps=0.2,tokens=200' },
} as const;
export type BenchModel = keyof typeof BENCH_MODELS;
const PRICING = { prompt: '0.000001', completion: '0.000002' };

export interface BenchGateway {
  running: RunningGateway;
  url: string;
  key: string;
  keyHash: string;
  accountId: string;
  /** Waits until the generations stop changing: requests cut off at the end of a run have settled. */
  quiesce(): Promise<void>;
  ledger(): Promise<Ledger>;
  /** Store transactions of the settler (group commit) so far, and the charges they carried. */
  commits(): Promise<CommitCount>;
  /** The `tollgate_settle_wait_seconds` histogram so far: answers, their total wait, and how many waited over 5 ms. */
  settleWait(): Promise<SettleWaitCount>;
  stop(): Promise<void>;
}

export interface SettleWaitCount {
  count: number;
  seconds: number;
  over5ms: number;
}

export interface CommitCount {
  transactions: number;
  charges: number;
}

/** Money in units (1e-9 USD), read back from the store after the run. */
export interface Ledger {
  keyUsage: bigint;
  accountUsage: bigint;
  generations: number;
  generationsCost: bigint;
  /** Rows whose stream or answer ended in an error (must be zero). */
  errored: number;
  /** Rows whose caller went away (autocannon closes its sockets when a run ends). */
  cancelled: number;
  /** cost → rows, for completed (not cancelled) generations. */
  costs: Map<bigint, number>;
}

/**
 * `maxConnections`: the gateway's `server.max_connections` (default 8,192), raised by the memory row
 * so that all its held streams are let in.
 */
export async function startBenchGateway(
  providerUrl: string,
  h2ProviderUrl: string,
  options: { maxConnections?: number } = {},
): Promise<BenchGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const configPath = join(dataDir, 'bench.yaml');
  writeFileSync(
    configPath,
    stringify({
      ...(options.maxConnections === undefined ? {} : { server: { max_connections: options.maxConnections } }),
      providers: [
        { id: 'sim', name: 'Simulator', kind: 'openai', base_url: providerUrl, api_key: 'bench-upstream-key' },
        {
          id: 'sim-plain',
          name: 'Simulator (plain)',
          kind: 'openai',
          base_url: providerUrl,
          api_key: 'bench-upstream-key',
          stream_upstream: false,
        },
        {
          id: 'sim-h2',
          name: 'Simulator (HTTP/2)',
          kind: 'openai',
          base_url: h2ProviderUrl,
          api_key: 'bench-upstream-key',
          http2: true,
        },
      ],
      models: Object.entries(BENCH_MODELS).map(([id, { provider, upstream }]) => ({
        id,
        name: id,
        context_length: 8192,
        endpoints: [{ provider, model: upstream, pricing: PRICING }],
      })),
    }),
  );
  const env = {
    TOLLGATE_CONFIG: configPath,
    TOLLGATE_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    TOLLGATE_LOG_LEVEL: 'silent' as const,
  };
  const running = await startGateway(env, pino({ level: 'silent' }));
  const { services } = running.gateway;
  const deps = { store: services.store, bus: services.bus, now: services.now };
  const account = await createAccount(deps, { email: 'bench@example.test' });
  await addCredits(deps, account.id, { amount: 1_000_000, kind: 'grant' });
  const { key, plaintext } = await createKey(deps, account.id, { name: 'bench' }, { management: false });
  const dbPath = join(dataDir, 'tollgate.db');

  return {
    running,
    url: running.url,
    key: plaintext,
    keyHash: key.hash,
    accountId: account.id,
    async quiesce() {
      const driver = openSqliteDriver(dbPath);
      try {
        let last = -1;
        for (let stable = 0, i = 0; stable < 3 && i < 100; i++) {
          const [row] = await driver.all('SELECT COUNT(*) AS n FROM generations');
          const count = Number(row?.n);
          stable = count === last ? stable + 1 : 0;
          last = count;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        await driver.close();
      }
    },
    async ledger() {
      const usage = await services.store.getKeyUsage([key.hash], usagePeriods(services.now()));
      const stored = await services.store.getAccount(account.id);
      // A second connection on the same file: the generation rows are the independent record of each charge.
      const driver = openSqliteDriver(dbPath);
      try {
        const [totals] = await driver.all(
          `SELECT COUNT(*) AS n, COALESCE(SUM(total_cost), 0) AS cost,
                  COALESCE(SUM(CASE WHEN finish_reason = 'error' THEN 1 ELSE 0 END), 0) AS errored,
                  COALESCE(SUM(CASE WHEN json_extract(details, '$.cancelled') THEN 1 ELSE 0 END), 0) AS cancelled
             FROM generations WHERE key_hash = ?`,
          [key.hash],
        );
        const byCost = await driver.all(
          `SELECT total_cost AS cost, COUNT(*) AS n FROM generations
            WHERE key_hash = ? AND NOT json_extract(details, '$.cancelled') GROUP BY total_cost`,
          [key.hash],
        );
        return {
          keyUsage: usage.get(key.hash)?.all.usage ?? 0n,
          accountUsage: stored?.totalUsage ?? -1n,
          generations: Number(totals?.n),
          generationsCost: BigInt(totals?.cost as bigint),
          errored: Number(totals?.errored),
          cancelled: Number(totals?.cancelled),
          costs: new Map(byCost.map((row) => [BigInt(row.cost as bigint), Number(row.n)])),
        };
      } finally {
        await driver.close();
      }
    },
    async commits() {
      const batch = await histogramValues(services.metrics.settleBatch);
      return { transactions: batch('count'), charges: batch('sum') };
    },
    async settleWait() {
      const wait = await histogramValues(services.metrics.settleWait);
      const count = wait('count');
      return { count, seconds: wait('sum'), over5ms: count - wait('bucket', 0.005) };
    },
    async stop() {
      await running.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A histogram's `_count`, `_sum` or `_bucket` (with its `le`) as read now; 0 when absent. */
async function histogramValues(
  histogram: Histogram,
): Promise<(suffix: 'count' | 'sum' | 'bucket', le?: number) => number> {
  const { name, values } = await histogram.get();
  return (suffix, le) =>
    values.find((v) => v.metricName === `${name}_${suffix}` && (le === undefined || v.labels.le === le))?.value ?? 0;
}
