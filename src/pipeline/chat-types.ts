/**
 * What the chat pipeline's steps share (pipeline/chat-completion.ts): the process's dependencies and an
 * admitted request. Types only, so every step module can import them without importing each other.
 */
import type { CreditGate, Hold } from '../billing/credit-gate.js';
import type { Settler } from '../billing/settler.js';
import type { CapacityGovernor } from '../limits/capacity.js';
import type { FreeModelPolicy } from '../limits/free-model-policy.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ByokCredentials } from '../routing/byok-credentials.js';
import type { Catalog } from '../routing/catalog.js';
import type { ExecuteDeps, RequestCapacity } from '../routing/execute.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { ChatRequest } from './chat-request.js';
import type { KeyLeakStep } from './key-leak-step.js';
import type { ModerationStep } from './moderation-step.js';

export type { ChatContext } from './chat-context.js';

export interface ChatDeps {
  catalog: Catalog;
  gate: CreditGate;
  settler: Settler;
  execute: ExecuteDeps;
  metrics: Metrics;
  log: Logger;
  now(): number;
  keepAliveMs: number;
  /** The moderation step (config `moderation`); absent or null when moderation is off. */
  moderation?: ModerationStep | null;
  /** Free-model rate limits (docs/api.md), per account. */
  freeModels: FreeModelPolicy;
  /** Capacity limits per model and endpoint (docs/api.md, "Capacity limits"); absent: none configured. */
  capacity?: CapacityGovernor | null;
  /** The account's own provider keys (BYOK), decrypted and cached. */
  byok: ByokCredentials;
  /** BYOK fee, in basis points of the list price. */
  byokFeeBasisPoints: number;
  /** Continue a stream that broke after content was sent on another endpoint supporting prefill (off by default). */
  continuation: boolean;
  /** A running stream's usage is journaled this often (ms); no checkpoints when absent. */
  checkpointMs?: number;
  /** Tollgate keys pasted into messages: redacted or refused (config secret_scanning.in_requests); null: off. */
  keyLeaks?: KeyLeakStep | null;
}

export interface Admitted {
  request: ChatRequest;
  plan: PlannedAttempt[];
  hold: Hold;
  promptEstimate: number;
  /** The most prompt tokens a provider's count is charged (billing/token-estimate.ts `promptCeilingOf`). */
  promptCeiling: number | null;
  /** How long moderation took (ms); null when it did not run. The generation's `moderation_latency`. */
  moderationLatencyMs: number | null;
  /** The request as validated (continuations start from it). */
  upstreamBody: Record<string, unknown>;
  /** What one attempt sends: the allowlisted fields and its endpoint's completion budget (upstream-request.ts). */
  bodyFor(planned: PlannedAttempt): Record<string, unknown>;
  /** The completion budget of an attempt's endpoint, as held. */
  budgetFor(planned: PlannedAttempt): number;
  /** The capacity claims of this request's attempts (null: no endpoint of the plan has a limit). */
  capacity: RequestCapacity | null;
}
