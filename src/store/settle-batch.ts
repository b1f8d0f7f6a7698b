/**
 * A batch of charges in one transaction. The generation insert decides what is new (its primary key
 * makes replays no-ops); counters are then summed in memory and written once per row. Rows are
 * touched in sorted order so concurrent batches on PostgreSQL cannot deadlock.
 *
 * Almost always every generation of a batch is new, so the batch first goes to the store as one
 * script that assumes so (`SqlDriver.batch`: on the embedded store, one round trip to its thread):
 * the insert must return every id, or the script rolls back and the batch is applied the careful
 * way, counting only what the insert returned.
 */
import { ALL_TIME } from '../core/usage-window.js';
import { GENERATION_COLUMN_COUNT, GENERATION_COLUMNS, generationToParams } from './generation-rows.js';
import { asString } from './row-values.js';
import { placeholderRows, type SqlDriver, type SqlParam, type SqlStatement } from './sql-driver.js';
import { byokUsageOf, type Settlement, type SettleOutcome } from './types.js';
import { usageRollupStatements } from './usage-rollup-batch.js';

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

/** Inserts the generations; each statement returns the ids it inserted (not those already there). */
function insertStatements(settlements: readonly Settlement[], expectAll: boolean): SqlStatement[] {
  return chunks(settlements, GENERATION_CHUNK).map((chunk) => ({
    sql:
      `INSERT INTO generations (${GENERATION_COLUMNS}) VALUES ${placeholderRows(GENERATION_COLUMN_COUNT, chunk.length)} ` +
      'ON CONFLICT (id) DO NOTHING RETURNING id',
    params: chunk.flatMap((settlement) => generationToParams(settlement.generation)),
    ...(expectAll ? { expectRows: chunk.length } : {}),
  }));
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

/** The counters of newly recorded generations: account totals, key usage per period, usage rollups. */
function counterStatements(recorded: readonly Settlement[]): SqlStatement[] {
  const out: SqlStatement[] = [];
  const accountUsage = new Map<string, bigint>();
  const keyUsage = new Map<string, UsageDelta>();
  for (const { generation, periods } of recorded) {
    accountUsage.set(generation.accountId, (accountUsage.get(generation.accountId) ?? 0n) + generation.totalCost);
    const byok = byokUsageOf(generation);
    for (const period of [ALL_TIME, periods.day, periods.week, periods.month]) {
      addUsage(keyUsage, generation.keyHash, period, generation.totalCost, byok);
    }
  }

  for (const accountId of [...accountUsage.keys()].sort()) {
    const amount = accountUsage.get(accountId)!;
    if (amount === 0n) continue;
    out.push({ sql: 'UPDATE accounts SET total_usage = total_usage + ? WHERE id = ?', params: [amount, accountId] });
  }

  const usageRows = [...keyUsage.values()]
    .filter((delta) => delta.usage !== 0n || delta.byokUsage !== 0n)
    .sort((a, b) => (a.keyHash === b.keyHash ? (a.period < b.period ? -1 : 1) : a.keyHash < b.keyHash ? -1 : 1));
  for (const chunk of chunks(usageRows, USAGE_CHUNK)) {
    const params: SqlParam[] = chunk.flatMap((delta) => [delta.keyHash, delta.period, delta.usage, delta.byokUsage]);
    out.push({
      sql:
        `INSERT INTO key_usage (key_hash, period, usage, byok_usage) VALUES ${placeholderRows(4, chunk.length)} ` +
        'ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, ' +
        'byok_usage = key_usage.byok_usage + excluded.byok_usage',
      params,
    });
  }

  // Usage rollups (dashboard, /activity, rankings): only what this transaction newly recorded.
  out.push(...usageRollupStatements(recorded));
  return out;
}

export async function settleBatch(driver: SqlDriver, batch: readonly Settlement[]): Promise<SettleOutcome[]> {
  const firstIndex = new Map<string, number>();
  batch.forEach((settlement, index) => {
    if (!firstIndex.has(settlement.generation.id)) firstIndex.set(settlement.generation.id, index);
  });
  const candidates = [...firstIndex.values()]
    .map((index) => batch[index]!)
    .sort((a, b) => (a.generation.id < b.generation.id ? -1 : a.generation.id > b.generation.id ? 1 : 0));
  const outcomes = (inserted: ReadonlySet<string>): SettleOutcome[] =>
    batch.map((settlement, index) => ({
      id: settlement.generation.id,
      applied: inserted.has(settlement.generation.id) && firstIndex.get(settlement.generation.id) === index,
    }));

  const allNew = await driver.batch([...insertStatements(candidates, true), ...counterStatements(candidates)]);
  if (allNew !== null) return outcomes(new Set(candidates.map((settlement) => settlement.generation.id)));

  // Some generation is already recorded (a replay): count only what this insert adds.
  return driver.transaction(async (tx) => {
    const inserted = new Set<string>();
    for (const statement of insertStatements(candidates, false)) {
      for (const row of await tx.all(statement.sql, statement.params)) inserted.add(asString(row.id));
    }
    const counters = counterStatements(candidates.filter(({ generation }) => inserted.has(generation.id)));
    // Independent of each other: issued at once, run in order (see SqlExecutor).
    await Promise.all(counters.map((statement) => tx.run(statement.sql, statement.params)));
    return outcomes(inserted);
  });
}
