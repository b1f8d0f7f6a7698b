/**
 * The moderation step's vocabulary. A Moderator looks at the caller's own text (user, system and
 * developer messages) before anything is forwarded and says whether it is flagged and why.
 */
import type { CancelSignal } from '../core/cancellation.js';

export interface ModerationInput {
  /** The texts to check, one per message (or text part), in request order. */
  texts: readonly string[];
  /** The model the caller asked for. */
  model: string;
  /** Aborted when the caller leaves; the moderator stops waiting. */
  signal?: CancelSignal;
}

export type ModerationVerdict =
  | { flagged: false }
  | {
      flagged: true;
      /** Why, e.g. the matching patterns' reasons or the endpoint's flagged categories. Never empty. */
      reasons: string[];
      /** The (first) flagged text, whole; the caller-facing copy is truncated by the pipeline. */
      flaggedInput: string;
    };

export interface Moderator {
  /** Reported as `metadata.provider_name` of a refusal. */
  readonly name: string;
  /** Resolves with the verdict; rejects with ModerationFailure when no verdict could be had. */
  check(input: ModerationInput): Promise<ModerationVerdict>;
}

/** The moderator could not decide (endpoint down, timeout, invalid answer): `on_error` applies. */
export class ModerationFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModerationFailure';
  }
}
