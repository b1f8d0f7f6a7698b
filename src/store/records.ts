/**
 * The records the storage contract speaks in (store/types.ts re-exports them): accounts, keys,
 * credits, generations, BYOK keys. Kept apart from the `Store` interface so the per-area store
 * contracts (account-auth-store.ts, usage-types.ts) can use them without an import cycle.
 *
 * Money fields are bigint units (1e-9 USD). Timestamps are epoch milliseconds.
 */
import type { Units } from '../core/money.js';
import type { LimitReset, UsagePeriods } from '../core/usage-window.js';

export type CreditKind = 'purchase' | 'grant' | 'adjustment';
export const CREDIT_KINDS: readonly CreditKind[] = ['purchase', 'grant', 'adjustment'];

export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string | null;
  createdAt: number;
  /** Sum of every purchase, grant and adjustment. */
  totalCredits: Units;
  /** Sum of purchases only (drives `is_free_tier` and the free-model daily cap). */
  totalPurchased: Units;
  /** Usage charged in credits, all time (BYOK fees included). */
  totalUsage: Units;
}

export interface NewAccount {
  id: string;
  email: string;
  passwordHash: string | null;
  createdAt: number;
}

export interface CreditEntry {
  id: string;
  accountId: string;
  kind: CreditKind;
  amount: Units; // may be negative only for `adjustment`
  reference: string | null; // idempotency: at most one entry per (account, reference)
  createdAt: number;
}

export interface KeyRecord {
  hash: string; // lowercase hex SHA-256 of the full key
  accountId: string;
  name: string;
  label: string; // masked form, "sk-tg-v1-abc...xyz"
  isManagement: boolean;
  disabled: boolean;
  limit: Units | null;
  limitReset: LimitReset | null;
  includeByokInLimit: boolean;
  expiresAt: number | null;
  createdAt: number;
  updatedAt: number | null;
  creatorUserId: string | null;
  externalUser: string | null;
  workspaceId: string;
  /** Guardrails: null = no restriction. */
  allowedModels: string[] | null;
  allowedProviders: string[] | null;
  /** Set when the key was reported compromised (it is disabled at the same time). */
  compromisedAt: number | null;
}

export type KeyPatch = Partial<
  Pick<
    KeyRecord,
    | 'name'
    | 'disabled'
    | 'limit'
    | 'limitReset'
    | 'includeByokInLimit'
    | 'expiresAt'
    | 'allowedModels'
    | 'allowedProviders'
    | 'compromisedAt'
  >
>;

export interface UsageTotals {
  usage: Units;
  byokUsage: Units;
}

export interface KeyUsage {
  all: UsageTotals;
  day: UsageTotals;
  week: UsageTotals;
  month: UsageTotals;
}

export interface ListKeysOptions {
  offset: number;
  limit: number;
  includeDisabled: boolean;
}

export interface ProviderAttempt {
  provider_name: string;
  status: number | null; // HTTP status, or null when no response arrived
  latency: number; // ms
}

/** The generation as stored; `GET /generation` renders it. */
export interface GenerationRecord {
  id: string;
  accountId: string;
  keyHash: string;
  createdAt: number;
  model: string;
  providerName: string | null;
  totalCost: Units;
  /** Cost of the upstream inference (prompt and completion parts); equals totalCost unless BYOK. */
  upstreamPromptCost: Units;
  upstreamCompletionCost: Units;
  /** Served, at least in part, with the caller's own provider key. */
  isByok: boolean;
  /**
   * The list cost of the part served with the caller's own key, when it is not the whole upstream
   * cost (a stream continued across a BYOK and a shared endpoint); absent otherwise — `byokUsageOf`.
   * Kept in `details`.
   */
  byokListCost?: Units;
  streamed: boolean;
  cancelled: boolean;
  finishReason: string | null;
  nativeFinishReason: string | null;
  tokensPrompt: number;
  tokensCompletion: number;
  tokensReasoning: number | null;
  tokensCached: number | null;
  /** True when the token counts are our tokenizer's estimate because the upstream reported none. */
  usageEstimated: boolean;
  latencyMs: number | null; // time to first token (or to the full response when not streamed)
  generationTimeMs: number | null;
  upstreamId: string | null;
  appTitle: string | null;
  httpReferer: string | null;
  userAgent: string | null;
  externalUser: string | null;
  providerResponses: ProviderAttempt[];
  /** How long the moderation step took (ms); absent when moderation did not run. Kept in `details`. */
  moderationLatencyMs?: number | null;
}

/**
 * What a generation adds to its key's BYOK usage (`byok_usage*`, and the limit of a key with
 * `include_byok_in_limit`): the list cost of what the caller's own provider key served.
 */
export function byokUsageOf(generation: GenerationRecord): Units {
  if (generation.byokListCost !== undefined) return generation.byokListCost;
  return generation.isByok ? generation.upstreamPromptCost + generation.upstreamCompletionCost : 0n;
}

/** One charge: the generation record, the ledger movement and the counters, applied together. */
export interface Settlement {
  generation: GenerationRecord;
  periods: UsagePeriods;
}

export interface SettleOutcome {
  id: string;
  /** False when a generation with this id was already recorded (idempotent replay): nothing changed. */
  applied: boolean;
}

/** An account's own provider key (BYOK). The key itself is stored only encrypted (`ciphertext`). */
export interface ByokRecord {
  id: string;
  accountId: string;
  provider: string; // provider slug of the catalog
  name: string | null;
  label: string; // masked form of the provider key
  ciphertext: string;
  disabled: boolean;
  /** Try shared capacity first and this key only after it (default: this key first). */
  isFallback: boolean;
  /** Use only this key for the provider, never shared capacity. */
  isRequired: boolean;
  sortOrder: number;
  allowedModels: string[] | null;
  allowedKeyHashes: string[] | null;
  createdAt: number;
  updatedAt: number | null;
}

export type ByokPatch = Partial<
  Pick<
    ByokRecord,
    | 'name'
    | 'disabled'
    | 'isFallback'
    | 'isRequired'
    | 'sortOrder'
    | 'allowedModels'
    | 'allowedKeyHashes'
    | 'ciphertext'
    | 'label'
  >
>;

export interface ByokStore {
  insert(record: ByokRecord): Promise<void>;
  /** Deleted entries are never returned. */
  get(id: string): Promise<ByokRecord | null>;
  /** Oldest first, then by id. */
  list(accountId: string): Promise<ByokRecord[]>;
  /** Every live entry of every account (key rotation re-encrypts them all). */
  listAll(): Promise<ByokRecord[]>;
  update(id: string, patch: ByokPatch, updatedAt: number): Promise<ByokRecord | null>;
  delete(id: string, deletedAt: number): Promise<boolean>;
}

/** What `markKeyCompromised` did: `newly` is false when the key had already been reported. */
export interface CompromisedKey {
  key: KeyRecord;
  newly: boolean;
  /** Messages queued in the same transaction. */
  queued: number;
}
