/**
 * Public rankings: apps and models by tokens (prompt + completion), in the shapes of OpenRouter's
 * datasets API (`@openrouter/sdk`'s `datasets.getAppRankings()` / `getRankingsDaily()`) and a summary
 * for the dashboard's `/rankings` page. They read only the fleet-wide public tables (no account, no
 * money); an app appears once `rankings.min_accounts` accounts have used it.
 */
import type { appRankingsResponse, rankingsDailyResponse, rankingsSummaryResponse } from './response-schemas.js';
import { z } from 'zod';
import { TollgateError } from '../core/errors.js';
import type { Catalog } from '../routing/catalog.js';
import type { UsageStore, DayRange, ModelDay, RankedApp } from '../store/usage-types.js';
import type { AsyncMutex } from '../store/async-mutex.js';
import { addDays, daysBetween, monthStart, parseUtcDay, utcDay, weekStart } from '../usage/utc-day.js';
import { parseQuery } from './activity.js';

export interface RankingsDeps {
  store: { usage: UsageStore };
  catalog: Catalog;
  minAccounts: number;
  now(): number;
  /**
   * These routes are public and a window may span a year of every model: their store reads go one
   * at a time, so that callers sending many at once queue behind each other rather than ahead of the
   * charges (the embedded store has one thread, which settlement shares).
   */
  reads: AsyncMutex;
}

/** One of these routes' store reads, in its turn (`RankingsDeps.reads`). */
function read<T>(deps: RankingsDeps, query: (usage: UsageStore) => Promise<T>): Promise<T> {
  return deps.reads.runExclusive(() => query(deps.store.usage));
}

/** OpenRouter's dataset floor: earlier start dates are clamped to it, earlier end dates refused. */
export const DATASET_FLOOR = '2025-01-01';
/** The longest window one request may aggregate (trending also reads the three windows before it). */
export const MAX_WINDOW_DAYS = 366;
export const TOP_MODELS_PER_DAY = 50;
export const OTHER = 'other';

function invalid(message: string): TollgateError {
  return new TollgateError('request.invalid_body', `Invalid request: ${message}`);
}

const unsupported = (name: string) =>
  z.undefined({ error: `${name} filters are not supported by this gateway` }).optional();

/**
 * The window: ends with the last completed UTC day unless `end_date` says otherwise (today is
 * allowed and counts the day so far); starts 30 days before the end unless `start_date` says so.
 */
export function resolveWindow(now: number, rawStart: string | undefined, rawEnd: string | undefined): DayRange {
  const today = utcDay(now);
  let to = addDays(today, -1);
  if (rawEnd !== undefined) {
    const end = parseUtcDay(rawEnd);
    if (end === null) throw invalid('end_date: must be a UTC date as YYYY-MM-DD');
    if (end < DATASET_FLOOR) throw invalid(`end_date: must be on or after ${DATASET_FLOOR}`);
    if (end > today) throw invalid(`end_date: must not be after today (${today} UTC)`);
    to = end;
  }
  let from = addDays(to, -30);
  if (rawStart !== undefined) {
    const start = parseUtcDay(rawStart);
    if (start === null) throw invalid('start_date: must be a UTC date as YYYY-MM-DD');
    from = start;
  }
  if (from < DATASET_FLOOR) from = DATASET_FLOOR;
  if (from > to) throw invalid(`start_date: must not be after end_date (${to})`);
  if (daysBetween(from, to) + 1 > MAX_WINDOW_DAYS) throw invalid(`the window may span at most ${MAX_WINDOW_DAYS} days`);
  return { from, to };
}

function meta(now: number, range: DayRange) {
  return { as_of: new Date(now).toISOString(), start_date: range.from, end_date: range.to, version: 'v1' as const };
}

/** Most tokens first; ties by requests, then name, so the order is stable across requests. */
function byTokens(a: RankedApp, b: RankedApp): number {
  if (a.tokens !== b.tokens) return a.tokens > b.tokens ? -1 : 1;
  if (a.requests !== b.requests) return b.requests - a.requests;
  return a.app.name < b.app.name ? -1 : a.app.name > b.app.name ? 1 : a.app.id - b.app.id;
}

export const appRankingsQuery = z.object({
  sort: z.enum(['popular', 'trending']).default('popular'),
  start_date: z.string().optional(),
  end_date: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(100).default(0),
  category: unsupported('category'),
  subcategory: unsupported('subcategory'),
});

export async function appRankings(
  deps: RankingsDeps,
  rawQuery: unknown,
): Promise<z.output<typeof appRankingsResponse>> {
  const query = parseQuery(appRankingsQuery, rawQuery);
  const now = deps.now();
  const range = resolveWindow(now, query.start_date, query.end_date);
  const current = await read(deps, (usage) => usage.appTotals(range, deps.minAccounts));
  let ranked: RankedApp[];
  if (query.sort === 'popular') {
    ranked = current.sort(byTokens);
  } else {
    // Trending: window volume minus the average of the three equal windows before it; growth only.
    const length = daysBetween(range.from, range.to) + 1;
    const before = await read(deps, (usage) =>
      usage.appTotals({ from: addDays(range.from, -3 * length), to: addDays(range.from, -1) }, deps.minAccounts),
    );
    const previous = new Map(before.map((entry) => [entry.app.id, entry.tokens]));
    const growth = new Map(
      current.map((entry) => [entry.app.id, 3n * entry.tokens - (previous.get(entry.app.id) ?? 0n)]),
    );
    ranked = current
      .filter((entry) => growth.get(entry.app.id)! > 0n)
      .sort((a, b) => {
        const ga = growth.get(a.app.id)!;
        const gb = growth.get(b.app.id)!;
        return ga !== gb ? (ga > gb ? -1 : 1) : byTokens(a, b);
      });
  }
  return {
    data: ranked.slice(query.offset, query.offset + query.limit).map((entry, index) => ({
      app_id: entry.app.id,
      app_name: entry.app.name,
      rank: query.offset + index + 1,
      total_requests: entry.requests,
      total_tokens: entry.tokens.toString(),
    })),
    meta: meta(now, range),
  };
}

export const rankingsDailyQuery = z.object({
  start_date: z.string().optional(),
  end_date: z.string().optional(),
  period: z.enum(['day', 'week', 'month']).default('day'),
  modality: unsupported('modality'),
  context_bucket: unsupported('context_bucket'),
  category: unsupported('category'),
  language_type: unsupported('language_type'),
});

const BUCKET = { day: (day: string) => day, week: weekStart, month: monthStart } as const;

export async function rankingsDaily(
  deps: RankingsDeps,
  rawQuery: unknown,
): Promise<z.output<typeof rankingsDailyResponse>> {
  const query = parseQuery(rankingsDailyQuery, rawQuery);
  const now = deps.now();
  const range = resolveWindow(now, query.start_date, query.end_date);
  const buckets = new Map<string, Map<string, bigint>>();
  for (const row of await read(deps, (usage) => usage.modelDays(range))) {
    const date = BUCKET[query.period](row.day);
    const models = buckets.get(date) ?? new Map<string, bigint>();
    models.set(row.model, (models.get(row.model) ?? 0n) + row.tokens);
    buckets.set(date, models);
  }
  const data: { date: string; model_permaslug: string; total_tokens: string }[] = [];
  for (const date of [...buckets.keys()].sort()) {
    const models = [...buckets.get(date)!].sort(([ma, ta], [mb, tb]) =>
      ta !== tb ? (ta > tb ? -1 : 1) : ma < mb ? -1 : ma > mb ? 1 : 0,
    );
    for (const [model, tokens] of models.slice(0, TOP_MODELS_PER_DAY))
      data.push({ date, model_permaslug: model, total_tokens: tokens.toString() });
    const rest = models.slice(TOP_MODELS_PER_DAY);
    if (rest.length > 0)
      data.push({
        date,
        model_permaslug: OTHER,
        total_tokens: rest.reduce((sum, [, tokens]) => sum + tokens, 0n).toString(),
      });
  }
  return { data, meta: meta(now, range) };
}

export const summaryQuery = z.object({
  period: z.enum(['day', 'week', 'month']).default('day'),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

function modelTotals(rows: readonly ModelDay[]): { model: string; tokens: bigint; requests: number }[] {
  const totals = new Map<string, { model: string; tokens: bigint; requests: number }>();
  for (const row of rows) {
    const entry = totals.get(row.model) ?? { model: row.model, tokens: 0n, requests: 0 };
    entry.tokens += row.tokens;
    entry.requests += row.requests;
    totals.set(row.model, entry);
  }
  return [...totals.values()].sort((a, b) =>
    a.tokens !== b.tokens ? (a.tokens > b.tokens ? -1 : 1) : a.model < b.model ? -1 : 1,
  );
}

/** Today, this (Monday-start) week or this month so far, in UTC: the dashboard's `/rankings` page. */
export async function rankingsSummary(
  deps: RankingsDeps,
  rawQuery: unknown,
): Promise<z.output<typeof rankingsSummaryResponse>> {
  const query = parseQuery(summaryQuery, rawQuery);
  const today = utcDay(deps.now());
  const range: DayRange = {
    from: query.period === 'day' ? today : query.period === 'week' ? weekStart(today) : monthStart(today),
    to: today,
  };
  const [apps, models] = await read(deps, async (usage) => [
    await usage.appTotals(range, deps.minAccounts),
    await usage.modelDays(range),
  ]);
  return {
    data: {
      period: query.period,
      start_date: range.from,
      end_date: range.to,
      apps: apps
        .sort(byTokens)
        .slice(0, query.limit)
        .map((entry, index) => ({
          rank: index + 1,
          name: entry.app.name,
          origin: entry.app.origin,
          total_tokens: Number(entry.tokens),
          requests: entry.requests,
        })),
      models: modelTotals(models)
        .slice(0, query.limit)
        .map((entry, index) => ({
          rank: index + 1,
          model: entry.model,
          name: deps.catalog.models.get(entry.model)?.name ?? entry.model,
          total_tokens: Number(entry.tokens),
          requests: entry.requests,
        })),
    },
  };
}
