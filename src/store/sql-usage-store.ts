/**
 * Usage rollups and account history over either SQL driver (one SQL text for SQLite and PostgreSQL,
 * but for the name of the JSON aggregate that returns a large read as one value: `tableOf`).
 */
import { CREDIT_KINDS, type CreditEntry, type CreditKind, type GenerationRecord } from './types.js';
import { GENERATION_COLUMNS, generationFromRow } from './generation-rows.js';
import { asBigInt, asNullableString, asNumber, asString } from './row-values.js';
import { placeholderTuple, type SqlDriver, type SqlParam, type SqlRow } from './sql-driver.js';
import type {
  ActivityRow,
  AppInfo,
  CreditPage,
  DailyQuery,
  DailyRow,
  DayRange,
  GenerationPage,
  KeyNames,
  ModelDay,
  RankedApp,
  UsageStore,
  UsageSums,
} from './usage-types.js';

const LOOKUP_CHUNK = 100;
/** Rows after a cursor in the newest-first order `created_at DESC, id DESC` (index-friendly on both stores). */
const OLDER_THAN_CURSOR = ' AND created_at <= ? AND (created_at < ? OR id < ?)';

const SUMS =
  'SUM(usage) AS usage, SUM(byok_usage) AS byok_usage, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens, ' +
  'SUM(completion_tokens) AS completion_tokens, SUM(reasoning_tokens) AS reasoning_tokens';
/** The same figures of one row, where a primary key makes each group a single row. */
const COLUMNS = 'usage, byok_usage, requests, prompt_tokens, completion_tokens, reasoning_tokens';

/**
 * The figures as the JSON rows of `tableOf` carry them: as text, so that nothing is rounded on the way
 * (amounts past 2^53 stay exact; a count past it is refused by `asNumber`, as from a row).
 */
const JSON_FIGURES =
  'CAST(usage AS TEXT), CAST(byok_usage AS TEXT), CAST(requests AS TEXT), CAST(prompt_tokens AS TEXT), ' +
  'CAST(completion_tokens AS TEXT), CAST(reasoning_tokens AS TEXT)';

/** The figures of a `tableOf` row, from its `at`th value on. */
function sumsFromValues(values: readonly unknown[], at: number): UsageSums {
  return {
    usage: asBigInt(values[at]),
    byokUsage: asBigInt(values[at + 1]),
    requests: asNumber(values[at + 2]),
    promptTokens: asNumber(values[at + 3]),
    completionTokens: asNumber(values[at + 4]),
    reasoningTokens: asNumber(values[at + 5]),
  };
}

const GROUP_COLUMN = { model: 'model', key: 'key_hash', app: 'app_id' } as const;

function appFromRow(row: SqlRow): AppInfo {
  return { id: asNumber(row.id), key: asString(row.app_key), origin: asString(row.origin), name: asString(row.name) };
}

function creditKind(value: unknown): CreditKind {
  const kind = asString(value);
  if (!(CREDIT_KINDS as readonly string[]).includes(kind)) throw new TypeError(`unknown credit kind ${kind}`);
  return kind as CreditKind;
}

export class SqlUsageStore implements UsageStore {
  constructor(private readonly driver: SqlDriver) {}

  async activity(accountId: string, range: DayRange, keyHash?: string): Promise<ActivityRow[]> {
    // Both are an index range, no sort. The unfiltered view reads one row per day × model × provider
    // (the model rollup's primary key: its rows are the answer, with nothing to sum — a GROUP BY
    // there cost ~3 of ~11 ms for 1,500 rows), not the per-key detail, which is summed over apps.
    const rows = await this.tableOf(
      keyHash === undefined
        ? `SELECT day, model, provider_name, ${COLUMNS} FROM usage_rollups_model WHERE account_id = ? AND day >= ? AND day <= ?`
        : `SELECT day, model, provider_name, ${SUMS} FROM usage_rollups WHERE account_id = ? AND key_hash = ? AND day >= ? AND day <= ? GROUP BY day, model, provider_name`,
      `day, model, provider_name, ${JSON_FIGURES}`,
      keyHash === undefined ? [accountId, range.from, range.to] : [accountId, keyHash, range.from, range.to],
    );
    return rows.map((row) => ({
      day: asString(row[0]),
      model: asString(row[1]),
      providerName: asString(row[2]),
      ...sumsFromValues(row, 3),
    }));
  }

  async daily(accountId: string, query: DailyQuery): Promise<DailyRow[]> {
    const column = GROUP_COLUMN[query.groupBy];
    // The coarsest rollup that holds the grouping and the filters.
    const table =
      query.groupBy === 'model' && query.keyHash === undefined
        ? 'usage_rollups_model'
        : query.groupBy !== 'model' && query.model === undefined
          ? 'usage_rollups_source'
          : 'usage_rollups';
    const params: SqlParam[] = [accountId, query.from, query.to];
    let filters = '';
    if (query.model !== undefined) {
      filters += ' AND model = ?';
      params.push(query.model);
    }
    if (query.keyHash !== undefined) {
      filters += ' AND key_hash = ?';
      params.push(query.keyHash);
    }
    const rows = await this.tableOf(
      `SELECT day, ${column} AS grp, ${SUMS} FROM ${table} WHERE account_id = ? AND day >= ? AND day <= ?${filters} GROUP BY day, ${column}`,
      `day, grp, ${JSON_FIGURES}`,
      params,
    );
    return rows.map((row) => ({
      day: asString(row[0]),
      group: query.groupBy === 'app' ? asNumber(row[1]) : asString(row[1]),
      ...sumsFromValues(row, 2),
    }));
  }

  /**
   * The rows of `query` as arrays of `values` (an expression list over its columns), built into one
   * JSON text by the database. For reads of hundreds or thousands of rows: the embedded store's
   * driver hands each row to JavaScript at ~5 µs (a 30-day view's 1,500 rows: ~9 ms of its thread,
   * then copied to the main thread), while one text of them all is built and parsed in ~2.5 ms.
   * The row order is the database's, as with `all` (callers sort what they show).
   */
  private async tableOf(query: string, values: string, params: readonly SqlParam[]): Promise<unknown[][]> {
    const aggregate =
      this.driver.dialect === 'postgres'
        ? `json_agg(json_build_array(${values}))`
        : `json_group_array(json_array(${values}))`;
    const [row] = await this.driver.all(`SELECT CAST(${aggregate} AS TEXT) AS json FROM (${query}) AS r`, params);
    // PostgreSQL's json_agg of no rows is NULL; SQLite's is '[]'.
    const text = row?.json ?? null;
    return text === null ? [] : (JSON.parse(asString(text)) as unknown[][]);
  }

  async keyOwner(hash: string): Promise<string | null> {
    const [row] = await this.driver.all('SELECT account_id FROM api_keys WHERE hash = ?', [hash]);
    return row ? asString(row.account_id) : null;
  }

  async keyNames(hashes: readonly string[]): Promise<Map<string, KeyNames>> {
    const names = new Map<string, KeyNames>();
    const unique = [...new Set(hashes)];
    for (let start = 0; start < unique.length; start += LOOKUP_CHUNK) {
      const chunk = unique.slice(start, start + LOOKUP_CHUNK);
      const rows = await this.driver.all(
        `SELECT hash, name, label, deleted_at FROM api_keys WHERE hash IN ${placeholderTuple(chunk.length)}`,
        chunk,
      );
      for (const row of rows)
        names.set(asString(row.hash), {
          name: asString(row.name),
          label: asString(row.label),
          deleted: row.deleted_at !== null && row.deleted_at !== undefined,
        });
    }
    return names;
  }

  async apps(ids: readonly number[]): Promise<Map<number, AppInfo>> {
    const apps = new Map<number, AppInfo>();
    const unique = [...new Set(ids)].filter((id) => id !== 0);
    for (let start = 0; start < unique.length; start += LOOKUP_CHUNK) {
      const chunk = unique.slice(start, start + LOOKUP_CHUNK);
      const rows = await this.driver.all(
        `SELECT id, app_key, origin, name FROM usage_apps WHERE id IN ${placeholderTuple(chunk.length)}`,
        chunk,
      );
      for (const row of rows) apps.set(asNumber(row.id), appFromRow(row));
    }
    return apps;
  }

  async recentGenerations(accountId: string, page: GenerationPage): Promise<GenerationRecord[] | null> {
    const params: SqlParam[] = [accountId];
    let filters = '';
    if (page.model !== undefined) {
      filters += ' AND model = ?';
      params.push(page.model);
    }
    if (page.keyHash !== undefined) {
      filters += ' AND key_hash = ?';
      params.push(page.keyHash);
    }
    if (page.before !== undefined) {
      const cursor = await this.cursor('generations', accountId, page.before);
      if (cursor === null) return null;
      filters += OLDER_THAN_CURSOR;
      params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    params.push(page.limit, page.offset);
    const rows = await this.driver.all(
      `SELECT ${GENERATION_COLUMNS} FROM generations WHERE account_id = ?${filters} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      params,
    );
    return rows.map(generationFromRow);
  }

  async creditHistory(accountId: string, page: CreditPage): Promise<CreditEntry[] | null> {
    const params: SqlParam[] = [accountId];
    let filters = '';
    if (page.before !== undefined) {
      const cursor = await this.cursor('credit_entries', accountId, page.before);
      if (cursor === null) return null;
      filters += OLDER_THAN_CURSOR;
      params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    params.push(page.limit, page.offset);
    const rows = await this.driver.all(
      `SELECT id, account_id, kind, amount, reference, created_at FROM credit_entries WHERE account_id = ?${filters} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      params,
    );
    return rows.map((row) => ({
      id: asString(row.id),
      accountId: asString(row.account_id),
      kind: creditKind(row.kind),
      amount: asBigInt(row.amount),
      reference: asNullableString(row.reference),
      createdAt: asNumber(row.created_at),
    }));
  }
  /** A paging cursor's position: the row `id` of the account's in `table`, or null. */
  private async cursor(
    table: 'generations' | 'credit_entries',
    accountId: string,
    id: string,
  ): Promise<{ createdAt: number; id: string } | null> {
    const [row] = await this.driver.all(`SELECT created_at FROM ${table} WHERE id = ? AND account_id = ?`, [
      id,
      accountId,
    ]);
    return row ? { createdAt: asNumber(row.created_at), id } : null;
  }

  async appTotals(range: DayRange, minAccounts: number): Promise<RankedApp[]> {
    const rows = await this.driver.all(
      'SELECT a.id, a.app_key, a.origin, a.name, SUM(d.requests) AS requests, SUM(d.prompt_tokens + d.completion_tokens) AS tokens ' +
        'FROM usage_app_daily d JOIN usage_apps a ON a.id = d.app_id ' +
        'WHERE d.day >= ? AND d.day <= ? AND d.app_id IN (SELECT app_id FROM usage_app_accounts GROUP BY app_id HAVING COUNT(*) >= ?) ' +
        'GROUP BY a.id, a.app_key, a.origin, a.name',
      [range.from, range.to, minAccounts],
    );
    return rows.map((row) => ({
      app: appFromRow(row),
      requests: asNumber(row.requests),
      tokens: asBigInt(row.tokens),
    }));
  }

  async modelDays(range: DayRange): Promise<ModelDay[]> {
    // Public and up to 366 days × every model: row by row, a year of 300 models held the embedded
    // store's one thread (settlement's too) for ~0.9 s.
    const rows = await this.tableOf(
      'SELECT day, model, requests, prompt_tokens + completion_tokens AS tokens FROM usage_model_daily WHERE day >= ? AND day <= ?',
      'day, model, CAST(requests AS TEXT), CAST(tokens AS TEXT)',
      [range.from, range.to],
    );
    return rows.map((row) => ({
      day: asString(row[0]),
      model: asString(row[1]),
      requests: asNumber(row[2]),
      tokens: asBigInt(row[3]),
    }));
  }
}
