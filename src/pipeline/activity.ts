/**
 * The account holder's usage: `GET /activity` (OpenRouter's shape), and the dashboard's daily series,
 * recent generations and credit history. Every usage figure comes from the rollups; only the page of
 * recent generations reads the generations table, by its (account_id, created_at) index.
 */
import type {
  activityResponse,
  creditHistoryResponse,
  dailyActivityResponse,
  recentGenerationsResponse,
} from './response-schemas.js';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { TollgateError } from '../core/errors.js';
import { findBadText } from '../core/storable-text.js';
import { unitsToUsd } from '../core/money.js';
import { pageOffset, pageOffsetUpTo } from '../core/page-offset.js';
import type { Catalog } from '../routing/catalog.js';
import type { Store } from '../store/types.js';
import type { DailyGroup, UsageSums } from '../store/usage-types.js';
import { appIdentity } from '../usage/app-identity.js';
import { addDays, parseUtcDay, utcDay } from '../usage/utc-day.js';

export interface ActivityDeps {
  store: Store;
  catalog: Catalog;
  now(): number;
}

/** `/activity` covers the last 30 completed UTC days (today is not complete, so not included). */
export const ACTIVITY_DAYS = 30;
export const MAX_DAILY_DAYS = 366;
export const GENERATIONS_MAX_LIMIT = 100;
/** Deep offsets walk the index row by row; the dashboard pages recent generations, not history. */
export const GENERATIONS_MAX_OFFSET = 10_000;
export const CREDIT_PAGE = 100;

const keyHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be a key hash (64 lowercase hex characters)');
const modelId = z.string().min(1).max(200);
/** `before`: the id of the last row a page showed; the next page starts after it (rows added meanwhile shift nothing). */
const pageCursor = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be the id of a row of an earlier page');

function sums(s: UsageSums) {
  return {
    usage: unitsToUsd(s.usage),
    byok_usage: unitsToUsd(s.byokUsage),
    requests: s.requests,
    prompt_tokens: s.promptTokens,
    completion_tokens: s.completionTokens,
    reasoning_tokens: s.reasoningTokens,
  };
}

/** Endpoint ids already derived, by model then provider: a 30-day view repeats each once a day. */
const endpointIds = new Map<string, Map<string, string>>();
let endpointIdsKept = 0;
const ENDPOINT_IDS_KEPT = 10_000;

/**
 * A stable, opaque id per (model, provider), shaped like OpenRouter's endpoint UUIDs. Derived rather
 * than stored, so a provider renamed in the config simply starts a new endpoint.
 */
export function endpointId(model: string, providerName: string): string {
  let byProvider = endpointIds.get(model);
  let id = byProvider?.get(providerName);
  if (id !== undefined) return id;
  const hex = createHash('sha256').update(`${model}\u0000${providerName}`).digest('hex');
  id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
  if (endpointIdsKept >= ENDPOINT_IDS_KEPT) {
    endpointIds.clear();
    endpointIdsKept = 0;
    byProvider = undefined;
  }
  if (byProvider === undefined) endpointIds.set(model, (byProvider = new Map()));
  byProvider.set(providerName, id);
  endpointIdsKept++;
  return id;
}

/**
 * Another account's key hash (or an unknown one) is 404, as `GET /keys/{hash}` answers: the answer
 * does not tell whether the key exists. Deleted keys of the account still have their history.
 */
async function ownKeyHash(
  deps: ActivityDeps,
  accountId: string,
  hash: string | undefined,
): Promise<string | undefined> {
  if (hash === undefined) return undefined;
  const owner = await deps.store.usage.keyOwner(hash);
  if (owner !== accountId)
    throw new TollgateError('resource.not_found', 'Key not found', { metadata: { api_key_hash: hash } });
  return hash;
}

export const activityQuery = z.object({ date: z.string().optional(), api_key_hash: keyHash.optional() });

export async function activity(
  deps: ActivityDeps,
  accountId: string,
  rawQuery: unknown,
): Promise<z.output<typeof activityResponse>> {
  const query = parseQuery(activityQuery, rawQuery);
  const today = utcDay(deps.now());
  let from = addDays(today, -ACTIVITY_DAYS);
  let to = addDays(today, -1);
  if (query.date !== undefined) {
    const day = parseUtcDay(query.date);
    if (day === null)
      throw new TollgateError('request.invalid_body', 'Invalid request: date: must be a UTC date as YYYY-MM-DD');
    if (day < from || day > to)
      throw new TollgateError(
        'request.invalid_body',
        `Invalid request: date: must be one of the last ${ACTIVITY_DAYS} completed UTC days (${from} to ${to})`,
      );
    from = to = day;
  }
  const hash = await ownKeyHash(deps, accountId, query.api_key_hash);
  const rows = await deps.store.usage.activity(accountId, { from, to }, hash);
  rows.sort((a, b) =>
    a.day !== b.day
      ? a.day < b.day
        ? 1
        : -1
      : a.usage !== b.usage
        ? a.usage < b.usage
          ? 1
          : -1
        : a.model < b.model
          ? -1
          : a.model > b.model
            ? 1
            : a.providerName < b.providerName
              ? -1
              : 1,
  );
  return {
    data: rows.map((row) => ({
      date: row.day,
      model: row.model,
      // Catalog ids are their own permaslugs (`canonical_slug` in /models).
      model_permaslug: row.model,
      endpoint_id: endpointId(row.model, row.providerName),
      provider_name: row.providerName,
      usage: unitsToUsd(row.usage),
      byok_usage_inference: unitsToUsd(row.byokUsage),
      requests: row.requests,
      prompt_tokens: row.promptTokens,
      completion_tokens: row.completionTokens,
      reasoning_tokens: row.reasoningTokens,
    })),
  };
}

export const dailyQuery = z.object({
  days: z.coerce.number().int().min(1).max(MAX_DAILY_DAYS).default(30),
  group_by: z.enum(['model', 'key', 'app']).default('model'),
  model: modelId.optional(),
  api_key_hash: keyHash.optional(),
});

export async function dailyActivity(
  deps: ActivityDeps,
  accountId: string,
  rawQuery: unknown,
): Promise<z.output<typeof dailyActivityResponse>> {
  const query = parseQuery(dailyQuery, rawQuery);
  const to = utcDay(deps.now());
  const from = addDays(to, -(query.days - 1));
  const hash = await ownKeyHash(deps, accountId, query.api_key_hash);
  const groupBy: DailyGroup = query.group_by;
  const rows = await deps.store.usage.daily(accountId, {
    from,
    to,
    groupBy,
    ...(query.model !== undefined ? { model: query.model } : {}),
    ...(hash !== undefined ? { keyHash: hash } : {}),
  });
  const label = await groupLabels(
    deps,
    groupBy,
    rows.map((row) => row.group),
  );
  const data = rows.map((row) => ({ date: row.day, ...label(row.group), ...sums(row) }));
  data.sort((a, b) =>
    a.date !== b.date ? (a.date < b.date ? -1 : 1) : a.group < b.group ? -1 : a.group > b.group ? 1 : 0,
  );
  return { data };
}

type Labeller = (group: string | number) => { group: string; group_label: string };

async function groupLabels(deps: ActivityDeps, groupBy: DailyGroup, groups: (string | number)[]): Promise<Labeller> {
  if (groupBy === 'model') {
    return (group) => ({
      group: String(group),
      group_label: deps.catalog.models.get(String(group))?.name ?? String(group),
    });
  }
  if (groupBy === 'key') {
    const names = await deps.store.usage.keyNames(groups.map(String));
    return (group) => {
      const key = names.get(String(group));
      const text = key ? `${key.name} (${key.label})${key.deleted ? ' (deleted)' : ''}` : String(group);
      return { group: String(group), group_label: text };
    };
  }
  const apps = await deps.store.usage.apps(groups.map(Number));
  return (group) => {
    const app = apps.get(Number(group));
    return app ? { group: app.key, group_label: app.name } : { group: '(none)', group_label: 'No app' };
  };
}

export const generationsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(GENERATIONS_MAX_LIMIT).default(50),
  offset: pageOffsetUpTo(GENERATIONS_MAX_OFFSET),
  before: pageCursor.optional(),
  model: modelId.optional(),
  api_key_hash: keyHash.optional(),
});

export async function recentGenerations(
  deps: ActivityDeps,
  accountId: string,
  rawQuery: unknown,
): Promise<z.output<typeof recentGenerationsResponse>> {
  const query = parseQuery(generationsQuery, rawQuery);
  const hash = await ownKeyHash(deps, accountId, query.api_key_hash);
  const generations = await deps.store.usage.recentGenerations(accountId, {
    limit: query.limit,
    offset: query.offset,
    ...(query.before !== undefined ? { before: query.before } : {}),
    ...(query.model !== undefined ? { model: query.model } : {}),
    ...(hash !== undefined ? { keyHash: hash } : {}),
  });
  if (generations === null) throw unknownCursor('generation');
  const keys = await deps.store.usage.keyNames(generations.map((g) => g.keyHash));
  return {
    data: generations.map((g) => {
      const app = appIdentity(g.httpReferer, g.appTitle);
      const key = keys.get(g.keyHash);
      return {
        id: g.id,
        created_at: new Date(g.createdAt).toISOString(),
        model: g.model,
        provider_name: g.providerName,
        app: app ? { name: app.name, origin: app.origin } : null,
        key_label: key?.label ?? null,
        key_name: key?.name ?? null,
        tokens_prompt: g.tokensPrompt,
        tokens_completion: g.tokensCompletion,
        total_cost: unitsToUsd(g.totalCost),
        latency: g.latencyMs,
        finish_reason: g.finishReason,
        streamed: g.streamed,
      };
    }),
  };
}

export const creditsQuery = z.object({
  offset: pageOffset,
  before: pageCursor.optional(),
});

export async function creditHistory(
  deps: ActivityDeps,
  accountId: string,
  rawQuery: unknown,
): Promise<z.output<typeof creditHistoryResponse>> {
  const query = parseQuery(creditsQuery, rawQuery);
  const entries = await deps.store.usage.creditHistory(accountId, {
    limit: CREDIT_PAGE,
    offset: query.offset,
    ...(query.before !== undefined ? { before: query.before } : {}),
  });
  if (entries === null) throw unknownCursor('credit entry');
  return {
    data: entries.map((entry) => ({
      id: entry.id,
      kind: entry.kind,
      amount: unitsToUsd(entry.amount),
      reference: entry.reference,
      created_at: new Date(entry.createdAt).toISOString(),
    })),
  };
}

function unknownCursor(what: string): TollgateError {
  return new TollgateError('request.invalid_body', `Invalid request: before: no ${what} of this account has that id`);
}

/** Query strings: a repeated parameter arrives as an array and is refused like any other bad value. */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.output<S> {
  const parsed = schema.safeParse(query ?? {});
  if (!parsed.success) {
    const message = parsed.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length ? issue.path.join('.') : 'query'}: ${issue.message}`)
      .join('; ');
    throw new TollgateError('request.invalid_body', `Invalid request: ${message}`);
  }
  const bad = findBadText(parsed.data, []);
  if (bad !== null)
    throw new TollgateError(
      'request.invalid_body',
      `Invalid request: ${bad.path.join('.')}: ${bad.nul ? 'contains a NUL character' : 'is not valid Unicode text (an unpaired surrogate)'}`,
    );
  return parsed.data;
}
