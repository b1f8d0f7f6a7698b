import { describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { TollgateError } from '../core/errors.js';
import { openAiAdapter } from '../providers/openai/adapter.js';
import type { ProviderAdapter, UpstreamRequest } from '../providers/types.js';
import { attemptCompletion, attemptStream } from './attempt.js';
import { byokHeaders } from './byok-headers.js';
import type { ByokCredential } from './byok-credentials.js';
import type { CatalogEndpoint, CatalogModel, CatalogProvider } from './catalog.js';
import type { ExecuteDeps } from './execute.js';
import { HealthRegistry } from './health.js';
import type { PlannedAttempt } from './plan.js';

const OPERATOR_HEADERS = {
  'API-Key': 'operator-azure-key',
  'x-api-key': 'operator-anthropic-key',
  Authorization: 'Bearer operator-key',
  'X-Goog-Api-Key': 'operator-gemini-key',
  'x-team': 'research',
};

describe('byokHeaders', () => {
  it("keeps only each API's allowlist: content type, accept, its own auth header, its version header", () => {
    const sent = {
      'Content-Type': 'application/json',
      accept: 'text/event-stream',
      authorization: 'Bearer own',
      'x-api-key': 'own',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'x',
      'x-goog-api-key': 'own',
      'OpenAI-Organization': 'org-operator',
      'x-team': 'research',
    };
    expect(byokHeaders(sent, 'openai')).toEqual({
      'Content-Type': 'application/json',
      accept: 'text/event-stream',
      authorization: 'Bearer own',
    });
    expect(byokHeaders(sent, 'anthropic')).toEqual({
      'Content-Type': 'application/json',
      accept: 'text/event-stream',
      'x-api-key': 'own',
      'anthropic-version': '2023-06-01',
    });
    expect(byokHeaders(sent, 'gemini')).toEqual({
      'Content-Type': 'application/json',
      accept: 'text/event-stream',
      'x-goog-api-key': 'own',
    });
  });
});

const provider: CatalogProvider = {
  id: 'azure',
  name: 'Azure',
  kind: 'openai',
  baseUrl: 'http://azure.invalid/v1',
  apiKey: 'operator-provider-key',
  headers: OPERATOR_HEADERS,
  privacyPolicyUrl: null,
  streamUpstream: true,
  wholeAnswerWithoutFinishReason: 'invalid',
  http2: false,
  timeouts: { connect_ms: 1000, first_token_ms: 1000, idle_ms: 1000, response_ms: 1000 },
  byok: true,
  names: ['azure'],
  dataPolicy: { dataCollection: 'allow', zdr: false },
};
const endpoint = { provider, upstreamModel: 'gpt', supportedParameters: [] } as unknown as CatalogEndpoint;
const model = { id: 'x/m' } as unknown as CatalogModel;
const ownKey: ByokCredential = {
  id: 'byok-1',
  provider: 'azure',
  apiKey: 'caller-own-key',
  isFallback: false,
  isRequired: false,
  sortOrder: 0,
  allowedModels: null,
  allowedKeyHashes: null,
};

/** An adapter that builds the real OpenAI request, keeps it, then throws as a failing serialisation would. */
function capturing(): { adapter: ProviderAdapter; built: UpstreamRequest[] } {
  const built: UpstreamRequest[] = [];
  const adapter: ProviderAdapter = {
    ...openAiAdapter,
    buildRequest(target, body, stream) {
      built.push(openAiAdapter.buildRequest(target, body, stream));
      throw new RangeError('Maximum call stack size exceeded');
    },
  };
  return { adapter, built };
}

function depsWith(adapter: ProviderAdapter): ExecuteDeps {
  const agent = new Agent();
  return {
    dispatcherFor: () => agent,
    adapterFor: () => adapter,
    now: () => Date.now(),
    health: new HealthRegistry({ failureThreshold: 1, openMs: 1000, maxOpenMs: 1000, probeTimeoutMs: 1000 }),
    policy: { maxAttempts: 1, budgetMs: 1000, triesPerEndpoint: 1, retryBackoffMs: 1, maxRetryWaitMs: 1 },
  };
}

describe('an attempt on a BYOK key', () => {
  it("sends the caller's key and none of the operator's headers (regression: only four auth names were dropped)", async () => {
    const { adapter, built } = capturing();
    const planned: PlannedAttempt = { model, endpoint, healthKey: 'x/m|azure|byok:byok-1', byok: ownKey };
    await attemptStream(depsWith(adapter), planned, { messages: [] }, new AbortController().signal);
    const headers = Object.fromEntries(
      Object.entries(built[0]!.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    expect(headers.authorization).toBe('Bearer caller-own-key');
    expect(headers['api-key']).toBeUndefined();
    expect(headers['x-api-key']).toBeUndefined();
    expect(headers['x-goog-api-key']).toBeUndefined();
    expect(headers['x-team']).toBeUndefined();
    expect(Object.keys(headers).sort()).toEqual(['accept', 'accept-encoding', 'authorization', 'content-type']);
    expect(JSON.stringify(built[0]!.headers)).not.toContain('operator');
  });

  it("keeps the operator's headers on the shared attempt", async () => {
    const { adapter, built } = capturing();
    const planned: PlannedAttempt = { model, endpoint, healthKey: 'x/m|azure', byok: null };
    await attemptStream(depsWith(adapter), planned, { messages: [] }, new AbortController().signal);
    expect(built[0]!.headers['API-Key']).toBe('operator-azure-key');
  });
});

describe('a request that cannot be built', () => {
  for (const streamUpstream of [true, false]) {
    it(`is a local failure (400), not a provider failure (stream_upstream: ${streamUpstream})`, async () => {
      const { adapter } = capturing();
      const planned: PlannedAttempt = {
        model,
        endpoint: { ...endpoint, provider: { ...provider, streamUpstream } },
        healthKey: 'x/m|azure',
        byok: null,
      };
      const result = await attemptCompletion(
        depsWith(adapter),
        planned,
        { messages: [] },
        new AbortController().signal,
      );
      expect(result.ok).toBe(false);
      expect('local' in result && result.local).toBeInstanceOf(TollgateError);
      expect('local' in result && result.local.code).toBe('request.invalid_body');
      expect('failure' in result).toBe(false);
    });
  }
});
