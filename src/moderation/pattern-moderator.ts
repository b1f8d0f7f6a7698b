/**
 * Moderation by a list of regular expressions, compiled once at boot. A text is flagged when any
 * pattern matches it; every matching pattern's reason is reported (once each, in list order).
 */
import type { ModerationInput, ModerationVerdict, Moderator } from './types.js';

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
    this.#rules = rules.map((rule) => ({ regex: new RegExp(rule.pattern, rule.flags.replace(/[gy]/g, '')), reason: rule.reason }));
  }

  async check(input: ModerationInput): Promise<ModerationVerdict> {
    const reasons: string[] = [];
    let flaggedInput: string | null = null;
    for (const text of input.texts) {
      for (const rule of this.#rules) {
        if (!rule.regex.test(text)) continue;
        flaggedInput ??= text;
        if (!reasons.includes(rule.reason)) reasons.push(rule.reason);
      }
    }
    return flaggedInput === null ? { flagged: false } : { flagged: true, reasons, flaggedInput };
  }
}
