/**
 * Pieces shared by the charge journal suites: a store that can be made unreachable, and the money
 * totals read straight from the database (Σ generation costs, Σ key usage, account usage).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { TollgateError } from '../../src/core/errors.js';
import type { SqlDriver } from '../../src/store/sql-driver.js';
import type { Settlement, Store } from '../../src/store/types.js';

export interface Breakable {
  /**
   * `all`: every call fails as an unreachable database would; `writes`: only charges (a full or
   * read-only disk); `silent`: `ping` never answers (a database stopped with SIGSTOP).
   */
  mode: 'ok' | 'all' | 'writes' | 'silent';
  wrap(store: Store): Store;
}

const READS = new Set(['getAccount', 'getKeyUsage', 'getKey', 'getGeneration', 'ping', 'countAccounts', 'listKeys']);

export function breakableStore(): Breakable {
  const state: Breakable = {
    mode: 'ok',
    wrap: (store) =>
      new Proxy(store, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (state.mode === 'silent' && property === 'ping') return new Promise(() => undefined);
            const failing =
              state.mode === 'all'
                ? property === 'settle' || READS.has(String(property))
                : state.mode === 'writes' && property === 'settle';
            if (failing) return Promise.reject(new TollgateError('store.unavailable', 'Storage is unavailable'));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }),
  };
  return state;
}

export async function journalDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'tollgate-journal-it-'));
}

export interface MoneyTotals {
  generations: bigint;
  generationCount: number;
  keyUsage: bigint;
  accountUsage: bigint;
}

export async function moneyTotals(driver: SqlDriver, accountId: string, keyHash: string): Promise<MoneyTotals> {
  const [g] = await driver.all(
    'SELECT COALESCE(SUM(total_cost), 0) AS total, COUNT(*) AS n FROM generations WHERE account_id = ?',
    [accountId],
  );
  const [k] = await driver.all(
    "SELECT COALESCE(SUM(usage), 0) AS total FROM key_usage WHERE key_hash = ? AND period = 'all'",
    [keyHash],
  );
  const [a] = await driver.all('SELECT total_usage FROM accounts WHERE id = ?', [accountId]);
  return {
    generations: BigInt(g!.total as bigint),
    generationCount: Number(g!.n),
    keyUsage: BigInt(k!.total as bigint),
    accountUsage: BigInt(a!.total_usage as bigint),
  };
}

export async function readyz(url: string): Promise<{ status: number; json: any }> {
  const response = await request(`${url}/readyz`);
  return { status: response.statusCode, json: await response.body.json() };
}

export async function metric(url: string, name: string): Promise<number | null> {
  const response = await request(`${url}/metrics`);
  const text = await response.body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').at(-1)) : null;
}

export async function until(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A charge of `cost` units with generation id `id`. */
export function journalSettlement(id: string, cost: bigint): Settlement {
  return {
    generation: {
      id,
      accountId: 'acct',
      keyHash: 'k'.repeat(64),
      createdAt: 1,
      model: 'm',
      providerName: 'p',
      totalCost: cost,
      upstreamPromptCost: cost,
      upstreamCompletionCost: 0n,
      isByok: false,
      streamed: false,
      cancelled: false,
      finishReason: 'stop',
      nativeFinishReason: 'stop',
      tokensPrompt: 1,
      tokensCompletion: 2,
      tokensReasoning: null,
      tokensCached: null,
      usageEstimated: false,
      latencyMs: 1,
      generationTimeMs: 1,
      upstreamId: null,
      appTitle: null,
      httpReferer: null,
      userAgent: null,
      externalUser: null,
      providerResponses: [],
    },
    periods: { day: 'd:2026-11-23', week: 'w:2026-11-23', month: 'm:2026-11' },
  };
}
