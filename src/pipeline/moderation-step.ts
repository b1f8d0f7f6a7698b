/**
 * The moderation step of a chat completion (between plan and admit): the caller's own text is
 * checked by the configured Moderator before anything is reserved, counted or forwarded, so a
 * refused request costs nothing and changes nothing (no hold, no free-model slot, no generation).
 *
 * Flagged → 403 `moderation.flagged` with `metadata: { reasons, flagged_input, provider_name, model_slug }`.
 * Moderator failure → `on_error`: `block` (default) refuses with 503 `moderation.unavailable`;
 * `allow` forwards the request unmoderated and logs a warning.
 * Logs and metrics never carry the checked text: a flag is logged with its reasons, the model and
 * the key's log id; the flagged text goes back only to the caller, truncated.
 */
import { keyLogId } from '../auth/key-format.js';
import type { ModerationConfig } from '../config/moderation-schema.js';
import { TollgateError } from '../core/errors.js';
import { moderationTexts, truncateMiddle } from '../moderation/moderation-input.js';
import { ModerationFailure, type ModerationVerdict, type Moderator } from '../moderation/types.js';
import type { Logger } from '../observability/logger.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { ChatContext } from './chat-context.js';
import type { ChatRequest } from './chat-request.js';

export type ModerationOutcome = 'passed' | 'flagged' | 'error_blocked' | 'error_allowed';

export interface ModerationStep {
  moderator: Moderator;
  onError: 'block' | 'allow';
  /** Model ids whose requests are moderated; null: every model. */
  appliesTo: ReadonlySet<string> | null;
  log: Logger;
  /** Called once per moderated request (metrics); never given text or key. */
  count(outcome: ModerationOutcome): void;
}

export function moderationStep(
  config: ModerationConfig,
  moderator: Moderator | null,
  log: Logger,
  count: (outcome: ModerationOutcome) => void = () => {},
): ModerationStep | null {
  if (moderator === null) return null;
  return {
    moderator,
    onError: config.on_error,
    appliesTo: config.applies_to === 'all' ? null : new Set(config.applies_to),
    log,
    count,
  };
}

/**
 * Runs moderation when it applies to the plan's models. Returns how long it took (ms, for the
 * generation's `moderation_latency`), or null when it did not run.
 */
export async function moderateRequest(
  step: ModerationStep | null | undefined,
  ctx: ChatContext,
  request: ChatRequest,
  plan: readonly PlannedAttempt[],
): Promise<number | null> {
  if (!step) return null;
  const appliesTo = step.appliesTo;
  if (appliesTo && !plan.some((attempt) => appliesTo.has(attempt.model.id))) return null;
  const texts = moderationTexts(request.messages);
  if (texts.length === 0) return null;

  const name = step.moderator.name;
  const logFields = {
    generation_id: ctx.generationId,
    key: keyLogId(ctx.key.hash),
    model: request.model,
    moderation: name,
  };
  const started = performance.now();
  let verdict: ModerationVerdict;
  try {
    verdict = await step.moderator.check({ texts, model: request.model, signal: ctx.signal });
  } catch (error) {
    const latencyMs = Math.round(performance.now() - started);
    if (ctx.signal.aborted)
      throw new TollgateError('moderation.unavailable', 'The request was cancelled during moderation');
    const reason = error instanceof ModerationFailure ? error.message : 'unexpected moderator error';
    if (!(error instanceof ModerationFailure))
      step.log.error({ ...logFields, err: error }, 'moderator failed unexpectedly');
    if (step.onError === 'allow') {
      step.count('error_allowed');
      step.log.warn(
        { ...logFields, reason, latency_ms: latencyMs },
        'moderation failed; forwarding unmoderated (moderation.on_error: allow)',
      );
      return latencyMs;
    }
    step.count('error_blocked');
    step.log.warn(
      { ...logFields, reason, latency_ms: latencyMs },
      'moderation failed; request refused (moderation.on_error: block)',
    );
    throw new TollgateError(
      'moderation.unavailable',
      'Moderation is temporarily unavailable, so the request was not forwarded. No credits were charged.',
      {
        metadata: { provider_name: name, error_type: 'moderation_unavailable' },
      },
    );
  }
  const latencyMs = Math.round(performance.now() - started);
  if (!verdict.flagged) {
    step.count('passed');
    return latencyMs;
  }
  step.count('flagged');
  step.log.info({ ...logFields, reasons: verdict.reasons, latency_ms: latencyMs }, 'input flagged by moderation');
  throw new TollgateError(
    'moderation.flagged',
    `${request.model} requires moderation by ${name}. Your input was flagged for ${verdict.reasons.map((r) => `"${r}"`).join(', ')}. No credits were charged.`,
    {
      metadata: {
        reasons: verdict.reasons,
        flagged_input: truncateMiddle(verdict.flaggedInput),
        provider_name: name,
        model_slug: request.model,
      },
    },
  );
}
