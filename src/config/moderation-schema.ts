/**
 * The `moderation` section of the config file: off (default), a pattern list compiled at boot, or an
 * OpenAI-compatible `/moderations` endpoint. Invalid regular expressions, patterns with nested
 * quantifiers (ReDoS, see moderation/regex-safety.ts), a mode without its settings and unknown
 * `applies_to` models are configuration errors, reported with every other problem at boot.
 * Patterns see the first 100 000 characters of each text (`MODERATED_TEXT_MAX`).
 */
import { z } from 'zod';
import { nestedQuantifierProblem } from '../moderation/regex-safety.js';
import { credentialSchema } from './header-schemas.js';

/** Flags a pattern may carry. `g` and `y` are refused: they make `RegExp.test` stateful. */
const FLAGS = /^[imsuv]*$/;

export const moderationPatternSchema = z
  .object({
    /** Regular expression source (JavaScript syntax), e.g. `\\bforbidden\\b`. */
    pattern: z.string().min(1),
    /** RegExp flags; default `i` (case-insensitive). Give `""` for a case-sensitive pattern. */
    flags: z
      .string()
      .regex(FLAGS, 'flags may only contain i, m, s, u, v (g and y make matching stateful)')
      .default('i'),
    /** Reported to the caller in `metadata.reasons`. */
    reason: z.string().min(1).max(200),
  })
  .strict()
  .superRefine((rule, ctx) => {
    try {
      new RegExp(rule.pattern, rule.flags);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        path: ['pattern'],
        message: `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`,
      });
      return;
    }
    // Callers choose the text: a pattern that can backtrack exponentially would let one request hang the gateway.
    const problem = nestedQuantifierProblem(rule.pattern, rule.flags);
    if (problem) ctx.addIssue({ code: 'custom', path: ['pattern'], message: `unsafe regular expression: ${problem}` });
  });

const endpointSchema = z
  .object({
    /** Base URL of an OpenAI-compatible API; `POST {base_url}/moderations` is called. */
    base_url: z.string().url(),
    /** Sent as `Authorization: Bearer`; use `${VAR}` to read it from the environment. */
    api_key: credentialSchema.optional(),
    model: z.string().min(1).default('omni-moderation-latest'),
    /** The whole call (connect, answer); on expiry `on_error` decides. */
    timeout_ms: z.number().int().positive().default(3_000),
  })
  .strict();

export const moderationSchema = z
  .object({
    mode: z.enum(['off', 'patterns', 'openai']).default('off'),
    patterns: z.array(moderationPatternSchema).default([]),
    endpoint: endpointSchema.optional(),
    /** When the moderator fails (endpoint down, timeout, invalid answer): refuse with 503, or forward unmoderated. */
    on_error: z.enum(['block', 'allow']).default('block'),
    /** Models whose requests are moderated: `all`, or a list of catalog model ids. */
    applies_to: z.union([z.literal('all'), z.array(z.string().min(1)).min(1)]).default('all'),
    /** `metadata.provider_name` of a refusal; default `Tollgate` (patterns) or `OpenAI` (endpoint). */
    provider_name: z.string().min(1).max(100).optional(),
  })
  .strict()
  .superRefine((section, ctx) => {
    if (section.mode === 'patterns' && section.patterns.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['patterns'], message: 'mode "patterns" needs at least one pattern' });
    }
    if (section.mode === 'openai' && !section.endpoint) {
      ctx.addIssue({ code: 'custom', path: ['endpoint'], message: 'mode "openai" needs endpoint.base_url' });
    }
  });

export type ModerationConfig = z.output<typeof moderationSchema>;
export type ModerationPatternConfig = z.output<typeof moderationPatternSchema>;

/** `moderation.applies_to` naming models the catalog does not have (checked on the raw input, like other cross-references). */
export function moderationReferenceProblems(raw: unknown): string[] {
  const record = (value: unknown): Record<string, unknown> =>
    value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  const root = record(raw);
  const appliesTo = record(root.moderation).applies_to;
  if (!Array.isArray(appliesTo)) return [];
  const models = new Set((Array.isArray(root.models) ? root.models : []).map((m) => record(m).id));
  return appliesTo.flatMap((id, i) =>
    typeof id === 'string' && !models.has(id) ? [`moderation.applies_to.${i}: unknown model "${id}"`] : [],
  );
}
