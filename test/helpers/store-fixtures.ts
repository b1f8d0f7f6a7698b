import { randomBytes, randomUUID } from 'node:crypto';
import { usagePeriods } from '../../src/core/usage-window.js';
import type { CreditEntry, GenerationRecord, KeyRecord, NewAccount, Settlement } from '../../src/store/types.js';

/** Builders for store records: unique ids every call, overridable fields. */

export function newAccountFixture(overrides: Partial<NewAccount> = {}): NewAccount {
  const id = `acct_${randomBytes(8).toString('hex')}`;
  return { id, email: `${id}@example.test`, passwordHash: null, createdAt: 1_700_000_000_000, ...overrides };
}

export function creditEntryFixture(accountId: string, overrides: Partial<CreditEntry> = {}): CreditEntry {
  return {
    id: randomUUID(),
    accountId,
    kind: 'grant',
    amount: 1_000_000_000n,
    reference: null,
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

export function keyFixture(accountId: string, overrides: Partial<KeyRecord> = {}): KeyRecord {
  const hash = randomBytes(32).toString('hex');
  return {
    hash,
    accountId,
    name: 'test key',
    label: `sk-tg-v1-${hash.slice(0, 3)}...${hash.slice(-3)}`,
    isManagement: false,
    disabled: false,
    limit: null,
    limitReset: null,
    includeByokInLimit: false,
    expiresAt: null,
    createdAt: 1_700_000_000_000,
    updatedAt: null,
    creatorUserId: null,
    externalUser: null,
    workspaceId: 'default',
    allowedModels: null,
    allowedProviders: null,
    compromisedAt: null,
    ...overrides,
  };
}

export function generationFixture(
  accountId: string,
  keyHash: string,
  overrides: Partial<GenerationRecord> = {},
): GenerationRecord {
  return {
    id: `gen-1700000000-${randomBytes(10).toString('hex')}`,
    accountId,
    keyHash,
    createdAt: 1_700_000_000_000,
    model: 'demo/echo',
    providerName: 'Demo',
    totalCost: 1_500n,
    upstreamPromptCost: 500n,
    upstreamCompletionCost: 1_000n,
    isByok: false,
    streamed: false,
    cancelled: false,
    finishReason: 'stop',
    nativeFinishReason: 'stop',
    tokensPrompt: 10,
    tokensCompletion: 20,
    tokensReasoning: null,
    tokensCached: null,
    usageEstimated: false,
    latencyMs: 120,
    generationTimeMs: 480,
    upstreamId: null,
    appTitle: null,
    httpReferer: null,
    userAgent: null,
    externalUser: null,
    providerResponses: [{ provider_name: 'Demo', status: 200, latency: 120 }],
    ...overrides,
  };
}

/** A settlement whose windows come from the generation's own timestamp. */
export function settlementFixture(generation: GenerationRecord): Settlement {
  return { generation, periods: usagePeriods(generation.createdAt) };
}
