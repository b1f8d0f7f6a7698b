/**
 * How long one attempt waits for its first content token. The endpoint's configured limit (provider,
 * then model, then endpoint overrides) is the floor: a silent endpoint is given up on after it, so a
 * fallback can still answer quickly. Once the endpoint's time to first token has been measured
 * (enough successes in the last 30 minutes), the limit grows to a multiple of that p99, up to a
 * ceiling, so a model that is slow by nature is not cut off by a limit made for ordinary ones.
 */
import type { HealthRegistry } from './health.js';
import type { PlannedAttempt } from './plan.js';

export interface AdaptiveFirstToken {
  multiplier: number;
  minSamples: number;
  maxMs: number;
}

export function adaptiveFirstTokenLimit(
  configuredMs: number,
  measured: { p99: number; samples: number } | null,
  adaptive: AdaptiveFirstToken | null,
): number {
  if (!adaptive || !measured || measured.samples < adaptive.minSamples) return configuredMs;
  const scaled = Math.ceil(measured.p99 * adaptive.multiplier);
  return Math.max(configuredMs, Math.min(scaled, Math.max(adaptive.maxMs, configuredMs)));
}

export function firstTokenLimitMs(
  planned: PlannedAttempt,
  health: HealthRegistry,
  adaptive: AdaptiveFirstToken | null,
  now: number,
): number {
  const configured = planned.endpoint.timeouts.first_token_ms;
  if (!adaptive) return configured;
  return adaptiveFirstTokenLimit(configured, health.firstTokenLatency(planned.healthKey, now), adaptive);
}
