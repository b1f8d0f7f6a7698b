import { ALL_TIME } from '../core/usage-window.js';
import { GENERATION_COLUMN_COUNT, GENERATION_COLUMNS, generationToParams } from './generation-rows.js';
import { asString } from './row-values.js';
import { placeholderTuple, type SqlExecutor, type SqlParam } from './sql-driver.js';
import type { Settlement, SettleOutcome } from './types.js';
import { writeUsageRollups } from './usage-rollup-batch.js';

const GENERATION_CHUNK = 100;
const USAGE_CHUNK = 200;

interface UsageDelta {
  keyHash: string;
  period: string;
  usage: bigint;
  byokUsage: bigint;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

async function insertGenerations(tx: SqlExecutor, settlements: readonly Settlement[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(settlements, GENERATION_CHUNK)) {
    const rows = await tx.all(
      `INSERT INTO generations (${GENERATION_COLUMNS}) VALUES ${chunk.map(() => placeholderTuple(GENERATION_COLUMN_COUNT)).join(', ')} ` +
        'ON CONFLICT (id) DO NOTHING RETURNING id',
      chunk.flatMap((settlement) => generationToParams(settlement.generation)),
    );
    for (const row of rows) inserted.add(asString(row.id));
  }
  return inserted;
}

function addUsage(
  deltas: Map<string, UsageDelta>,
  keyHash: string,
  period: string,
  usage: bigint,
  byokUsage: bigint,
): void {
  const id = `${keyHash}\u0000${period}`;
  const delta = deltas.get(id) ?? { keyHash, period, usage: 0n, byokUsage: 0n };
  delta.usage += usage;
  delta.byokUsage += byokUsage;
  deltas.set(id, delta);
}

/**
 * Applies a batch inside the caller's transaction. The generation insert decides what is new (its
 * primary key makes replays no-ops); counters are then summed in memory and written once per row.
 * Rows are touched in sorted order so concurrent batches on PostgreSQL cannot deadlock.
 */
export async function settleBatch(tx: SqlExecutor, batch: readonly Settlement[]): Promise<SettleOutcome[]> {
  const firstIndex = new Map<string, number>();
  batch.forEach((settlement, index) => {
    if (!firstIndex.has(settlement.generation.id)) firstIndex.set(settlement.generation.id, index);
  });
  const candidates = [...firstIndex.values()]
    .map((index) => batch[index]!)
    .sort((a, b) => (a.generation.id < b.generation.id ? -1 : a.generation.id > b.generation.id ? 1 : 0));
  const inserted = await insertGenerations(tx, candidates);

  const accountUsage = new Map<string, bigint>();
  const keyUsage = new Map<string, UsageDelta>();
  for (const { generation, periods } of candidates) {
    if (!inserted.has(generation.id)) continue;
    accountUsage.set(generation.accountId, (accountUsage.get(generation.accountId) ?? 0n) + generation.totalCost);
    const byok = generation.isByok ? generation.upstreamPromptCost + generation.upstreamCompletionCost : 0n;
    for (const period of [ALL_TIME, periods.day, periods.week, periods.month]) {
      addUsage(keyUsage, generation.keyHash, period, generation.totalCost, byok);
    }
  }

  for (const accountId of [...accountUsage.keys()].sort()) {
    const amount = accountUsage.get(accountId)!;
    if (amount === 0n) continue;
    await tx.run('UPDATE accounts SET total_usage = total_usage + ? WHERE id = ?', [amount, accountId]);
  }

  const usageRows = [...keyUsage.values()]
    .filter((delta) => delta.usage !== 0n || delta.byokUsage !== 0n)
    .sort((a, b) => (a.keyHash === b.keyHash ? (a.period < b.period ? -1 : 1) : a.keyHash < b.keyHash ? -1 : 1));
  for (const chunk of chunks(usageRows, USAGE_CHUNK)) {
    const params: SqlParam[] = chunk.flatMap((delta) => [delta.keyHash, delta.period, delta.usage, delta.byokUsage]);
    await tx.run(
      `INSERT INTO key_usage (key_hash, period, usage, byok_usage) VALUES ${chunk.map(() => placeholderTuple(4)).join(', ')} ` +
        'ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, ' +
        'byok_usage = key_usage.byok_usage + excluded.byok_usage',
      params,
    );
  }

  // Usage rollups (dashboard, /activity, rankings): only what this transaction newly recorded.
  await writeUsageRollups(
    tx,
    candidates.filter(({ generation }) => inserted.has(generation.id)),
  );

  return batch.map((settlement, index) => ({
    id: settlement.generation.id,
    applied: inserted.has(settlement.generation.id) && firstIndex.get(settlement.generation.id) === index,
  }));
}
