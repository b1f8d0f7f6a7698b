/**
 * Reads of the usage rollups (migration 4) and of an account's recent history. Days are UTC
 * `YYYY-MM-DD`, both bounds inclusive. Money is bigint units (1e-9 USD).
 */
import type { CreditEntry, GenerationRecord } from './records.js';

export interface UsageSums {
  usage: bigint;
  byokUsage: bigint;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
}

export interface DayRange {
  from: string;
  to: string;
}

/** One row of `/activity`: a day, a model and the provider that served it. */
export interface ActivityRow extends UsageSums {
  day: string;
  model: string;
  providerName: string;
}

export type DailyGroup = 'model' | 'key' | 'app';

export interface DailyRow extends UsageSums {
  day: string;
  /** Model id, key hash, or app id (0 = no app), per the grouping. */
  group: string | number;
}

export interface DailyQuery extends DayRange {
  groupBy: DailyGroup;
  model?: string;
  keyHash?: string;
}

export interface AppInfo {
  id: number;
  key: string;
  origin: string;
  name: string;
}

export interface KeyNames {
  name: string;
  label: string;
  deleted: boolean;
}

export interface PublicTotals {
  requests: number;
  /** Prompt + completion tokens. */
  tokens: bigint;
}

export interface RankedApp extends PublicTotals {
  app: AppInfo;
}

export interface ModelDay extends PublicTotals {
  day: string;
  model: string;
}

export interface GenerationPage {
  limit: number;
  offset: number;
  model?: string;
  keyHash?: string;
  /** Only rows older than this one of the account's (a keyset cursor: rows added meanwhile shift nothing). */
  before?: string;
}

export interface CreditPage {
  limit: number;
  offset: number;
  /** Only entries older than this one of the account's. */
  before?: string;
}

export interface UsageStore {
  activity(accountId: string, range: DayRange, keyHash?: string): Promise<ActivityRow[]>;
  daily(accountId: string, query: DailyQuery): Promise<DailyRow[]>;
  /** The account that owns a key, deleted keys included (their usage stays in the rollups); null if unknown. */
  keyOwner(hash: string): Promise<string | null>;
  keyNames(hashes: readonly string[]): Promise<Map<string, KeyNames>>;
  apps(ids: readonly number[]): Promise<Map<number, AppInfo>>;
  /** Newest first, by the generations' (account_id, created_at) index; null when `before` is not the account's. */
  recentGenerations(accountId: string, page: GenerationPage): Promise<GenerationRecord[] | null>;
  /** Newest first; null when `before` is not one of the account's entries. */
  creditHistory(accountId: string, page: CreditPage): Promise<CreditEntry[] | null>;

  // Public rankings: fleet-wide tables without accounts or money.
  /** Apps with traffic in the range, used by at least `minAccounts` accounts (all time). */
  appTotals(range: DayRange, minAccounts: number): Promise<RankedApp[]>;
  modelDays(range: DayRange): Promise<ModelDay[]>;
}
