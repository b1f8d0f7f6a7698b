/**
 * Moderation by a list of regular expressions, compiled once at boot. A text is flagged when any
 * pattern matches it; every matching pattern's reason is reported (once each, in list order).
 *
 * The patterns come from the operator, the texts from callers, so matching must not be able to
 * hang the event loop (ReDoS; see regex-safety.ts): V8's linear-time fallback is switched on before
 * the patterns are compiled, the config refuses nested quantifiers, and only the first
 * MODERATED_TEXT_MAX characters of each text (message or text part) are checked: text past that
 * point is not moderated by patterns.
 */
import { enableLinearRegexFallback } from './regex-safety.js';
import type { ModerationInput, ModerationVerdict, Moderator } from './types.js';

/** Characters of each text the patterns see (the start of a longer text). */
export const MODERATED_TEXT_MAX = 100_000;

export interface PatternRule {
  pattern: string;
  /** RegExp flags; `g`/`y` are refused at config time (they make `test` stateful). */
  flags: string;
  reason: string;
}

interface CompiledRule {
  regex: RegExp;
  reason: string;
}

export class PatternModerator implements Moderator {
  readonly #rules: readonly CompiledRule[];

  /** Throws on an invalid pattern (the config schema reports it earlier, with every other problem). */
  constructor(
    rules: readonly PatternRule[],
    readonly name = 'Tollgate',
  ) {
    // Before compiling: the flag applies to regexes compiled after it is set.
    enableLinearRegexFallback();
    this.#rules = rules.map((rule) => ({
      regex: new RegExp(rule.pattern, rule.flags.replace(/[gy]/g, '')),
      reason: rule.reason,
    }));
  }

  async check(input: ModerationInput): Promise<ModerationVerdict> {
    const reasons: string[] = [];
    let flaggedInput: string | null = null;
    for (const text of input.texts) {
      const checked = text.length > MODERATED_TEXT_MAX ? text.slice(0, MODERATED_TEXT_MAX) : text;
      for (const rule of this.#rules) {
        if (!rule.regex.test(checked)) continue;
        flaggedInput ??= text;
        if (!reasons.includes(rule.reason)) reasons.push(rule.reason);
      }
    }
    return flaggedInput === null ? { flagged: false } : { flagged: true, reasons, flaggedInput };
  }
}
