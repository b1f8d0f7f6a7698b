/**
 * What the execute loop (execute.ts) and a single attempt (attempt.ts) need from the process: the
 * transport per provider, the adapters, time, endpoint health and the retry policy. Its own module so
 * that the two files do not import each other.
 */
import type { Dispatcher } from 'undici';
import type { CancelSignal } from '../core/cancellation.js';
import type { ProviderAdapter, ProviderKind } from '../providers/types.js';
import type { AdaptiveFirstToken } from './first-token-limit.js';
import type { HealthRegistry } from './health.js';
import type { SecretScrubber } from './secret-scrubber.js';

export interface RetryPolicy {
  maxAttempts: number;
  budgetMs: number;
  triesPerEndpoint: number;
  retryBackoffMs: number;
  maxRetryWaitMs: number;
  /** Raise an endpoint's first-token limit to a multiple of its measured p99 (null: the configured limits only). */
  adaptiveFirstToken?: AdaptiveFirstToken | null;
}

export interface ExecuteDeps {
  dispatcherFor(providerId: string): Dispatcher;
  adapterFor(kind: ProviderKind): ProviderAdapter;
  now(): number;
  health: HealthRegistry;
  policy: RetryPolicy;
  /** Waits (abortably); injectable so tests of the loop need no real time. */
  sleep?(ms: number, signal: CancelSignal): Promise<void>;
  /** [0, 1): jitter source. */
  random?(): number;
  /** Scrubs upstream texts of the configured provider keys (and, per request, its BYOK keys). */
  secrets?: SecretScrubber;
  /** Our token count of upstream output, to stop a stream far past its completion limit; absent: never stopped. */
  countTokens?(text: string): number;
}
