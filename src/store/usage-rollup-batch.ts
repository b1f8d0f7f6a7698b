/**
 * The usage rollups of a settle batch, as statements run inside the charge's transaction
 * (settle-batch.ts) for the generations that batch actually inserted, so a replayed generation id
 * adds nothing.
 * Deltas are summed in memory (one statement per table and chunk, and PostgreSQL refuses to update
 * one row twice in a statement) and rows are written in sorted order, every transaction taking the
 * same locks in the same order: concurrent batches cannot deadlock. The fleet-wide public tables
 * come last, so their hot rows are locked only for the end of the transaction.
 */
import { appIdentity, type AppIdentity } from '../usage/app-identity.js';
import { placeholderRows, type SqlParam, type SqlStatement } from './sql-driver.js';
import { byokUsageOf, type Settlement } from './types.js';

const CHUNK = 100;

interface Totals {
  usage: bigint;
  byokUsage: bigint;
  requests: bigint;
  prompt: bigint;
  completion: bigint;
  reasoning: bigint;
}

interface Row<K> {
  key: K;
  sort: string;
  totals: Totals;
}

function zero(): Totals {
  return { usage: 0n, byokUsage: 0n, requests: 0n, prompt: 0n, completion: 0n, reasoning: 0n };
}

function add(rows: Map<string, Row<unknown>>, sort: string, key: unknown, delta: Totals): void {
  let row = rows.get(sort);
  if (row === undefined) rows.set(sort, (row = { key, sort, totals: zero() }));
  const totals = row.totals;
  totals.usage += delta.usage;
  totals.byokUsage += delta.byokUsage;
  totals.requests += delta.requests;
  totals.prompt += delta.prompt;
  totals.completion += delta.completion;
  totals.reasoning += delta.reasoning;
}

function sorted<K>(rows: Map<string, Row<unknown>>): Row<K>[] {
  return ([...rows.values()] as Row<K>[]).sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0));
}

function upsert(out: SqlStatement[], head: string, width: number, tail: string, rows: readonly SqlParam[][]): void {
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    out.push({
      sql: `${head} VALUES ${placeholderRows(width, chunk.length)} ${tail}`,
      params: chunk.flat(),
    });
  }
}

const SEP = '\u0000';
/** Sort keys of numeric ids must order like the numbers: fixed width. */
const pad = (id: number) => id.toString().padStart(16, '0');

interface RollupKey {
  accountId: string;
  keyHash: string;
  day: string;
  model: string;
  provider: string;
  appId: number;
}

const TOTALS_COLUMNS = 'usage, byok_usage, requests, prompt_tokens, completion_tokens, reasoning_tokens';

/** Upsert tails, built on first use (each settle batch writes the same tables). */
const upsertTails = new Map<string, string>();

function accumulate(table: string, conflict: string): string {
  const id = `${table}(${conflict})`;
  let tail = upsertTails.get(id);
  if (tail === undefined) {
    const sum = (column: string) => `${column} = ${table}.${column} + excluded.${column}`;
    tail = `ON CONFLICT (${conflict}) DO UPDATE SET ${TOTALS_COLUMNS.split(', ').map(sum).join(', ')}`;
    upsertTails.set(id, tail);
  }
  return tail;
}

export function usageRollupStatements(settlements: readonly Settlement[]): SqlStatement[] {
  const out: SqlStatement[] = [];
  if (settlements.length === 0) return out;
  const rollups = new Map<string, Row<unknown>>();
  const byModel = new Map<string, Row<unknown>>();
  const bySource = new Map<string, Row<unknown>>();
  const appDaily = new Map<string, Row<unknown>>();
  const modelDaily = new Map<string, Row<unknown>>();
  const apps = new Map<number, { app: AppIdentity; createdAt: number }>();
  const appAccounts = new Map<string, { appId: number; accountId: string; createdAt: number }>();

  for (const { generation: g, periods } of settlements) {
    const day = periods.day.slice(2); // "d:YYYY-MM-DD": the same UTC day as the key's daily counter
    const app = appIdentity(g.httpReferer, g.appTitle);
    const appId = app?.id ?? 0;
    const delta: Totals = {
      usage: g.totalCost,
      byokUsage: byokUsageOf(g),
      requests: 1n,
      prompt: BigInt(g.tokensPrompt),
      completion: BigInt(g.tokensCompletion),
      reasoning: BigInt(g.tokensReasoning ?? 0),
    };
    const provider = g.providerName ?? '';
    const key: RollupKey = { accountId: g.accountId, keyHash: g.keyHash, day, model: g.model, provider, appId };
    add(rollups, [g.accountId, g.keyHash, day, g.model, provider, pad(appId)].join(SEP), key, delta);
    add(byModel, [g.accountId, day, g.model, provider].join(SEP), key, delta);
    add(bySource, [g.accountId, day, g.keyHash, pad(appId)].join(SEP), key, delta);
    add(modelDaily, [day, g.model].join(SEP), { day, model: g.model }, delta);
    if (app) {
      add(appDaily, [day, pad(app.id)].join(SEP), { day, appId: app.id }, delta);
      const known = apps.get(app.id);
      if (!known || (!known.app.titled && app.titled)) apps.set(app.id, { app, createdAt: g.createdAt });
      appAccounts.set([pad(app.id), g.accountId].join(SEP), {
        appId: app.id,
        accountId: g.accountId,
        createdAt: g.createdAt,
      });
    }
  }

  const t = (x: Totals) => [x.usage, x.byokUsage, x.requests, x.prompt, x.completion, x.reasoning];
  upsert(
    out,
    `INSERT INTO usage_rollups (account_id, key_hash, day, model, provider_name, app_id, ${TOTALS_COLUMNS})`,
    12,
    accumulate('usage_rollups', 'account_id, key_hash, day, model, provider_name, app_id'),
    sorted<RollupKey>(rollups).map(({ key: k, totals }) => [
      k.accountId,
      k.keyHash,
      k.day,
      k.model,
      k.provider,
      k.appId,
      ...t(totals),
    ]),
  );
  upsert(
    out,
    `INSERT INTO usage_rollups_model (account_id, day, model, provider_name, ${TOTALS_COLUMNS})`,
    10,
    accumulate('usage_rollups_model', 'account_id, day, model, provider_name'),
    sorted<RollupKey>(byModel).map(({ key: k, totals }) => [k.accountId, k.day, k.model, k.provider, ...t(totals)]),
  );
  upsert(
    out,
    `INSERT INTO usage_rollups_source (account_id, day, key_hash, app_id, ${TOTALS_COLUMNS})`,
    10,
    accumulate('usage_rollups_source', 'account_id, day, key_hash, app_id'),
    sorted<RollupKey>(bySource).map(({ key: k, totals }) => [k.accountId, k.day, k.keyHash, k.appId, ...t(totals)]),
  );

  // An app's name is its first title: a later request cannot rename someone else's app, but an app
  // first seen without a title gets the first one that arrives.
  upsert(
    out,
    'INSERT INTO usage_apps (id, app_key, origin, name, titled, created_at)',
    6,
    'ON CONFLICT (id) DO UPDATE SET name = excluded.name, titled = excluded.titled WHERE usage_apps.titled = 0 AND excluded.titled = 1',
    [...apps.values()]
      .sort((a, b) => a.app.id - b.app.id)
      .map(({ app, createdAt }) => [app.id, app.key, app.origin, app.name, app.titled, createdAt]),
  );
  upsert(
    out,
    'INSERT INTO usage_app_accounts (app_id, account_id, created_at)',
    3,
    'ON CONFLICT (app_id, account_id) DO NOTHING',
    [...appAccounts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => [v.appId, v.accountId, v.createdAt]),
  );

  const publicTail = (table: string, conflict: string) =>
    `ON CONFLICT (${conflict}) DO UPDATE SET requests = ${table}.requests + excluded.requests, ` +
    `prompt_tokens = ${table}.prompt_tokens + excluded.prompt_tokens, completion_tokens = ${table}.completion_tokens + excluded.completion_tokens`;
  upsert(
    out,
    'INSERT INTO usage_app_daily (day, app_id, requests, prompt_tokens, completion_tokens)',
    5,
    publicTail('usage_app_daily', 'day, app_id'),
    sorted<{ day: string; appId: number }>(appDaily).map(({ key, totals }) => [
      key.day,
      key.appId,
      totals.requests,
      totals.prompt,
      totals.completion,
    ]),
  );
  upsert(
    out,
    'INSERT INTO usage_model_daily (day, model, requests, prompt_tokens, completion_tokens)',
    5,
    publicTail('usage_model_daily', 'day, model'),
    sorted<{ day: string; model: string }>(modelDaily).map(({ key, totals }) => [
      key.day,
      key.model,
      totals.requests,
      totals.prompt,
      totals.completion,
    ]),
  );
  return out;
}
