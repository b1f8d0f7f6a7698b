/**
 * Guards against operator-configured moderation patterns that backtrack catastrophically (ReDoS):
 * `^(\w+\s?)+$` on 29 characters froze the event loop for 13 s. Three layers:
 *
 * 1. `enableLinearRegexFallback()`: V8 switches a regex that backtracks excessively to its
 *    linear-time engine. The flag applies to regexes compiled after it is set, so the pattern
 *    moderator sets it before compiling. On Node 20 that engine does not take every regex: not the
 *    `i`, `u` or `v` flags (and `i` is our default), not backreferences or lookarounds; those keep
 *    the backtracking engine.
 * 2. `nestedQuantifierProblem()`: the config schema refuses the classic exponential shape, a
 *    repeated group that itself contains a quantifier, whatever the flags.
 * 3. The pattern moderator checks only the first `MODERATED_TEXT_MAX` characters of a text, which
 *    bounds the polynomial cases (`\s*\s*x`) the structural check does not see.
 */
import v8 from 'node:v8';

let fallbackEnabled = false;

/** Idempotent; affects regexes compiled afterwards (process-wide). */
export function enableLinearRegexFallback(): void {
  if (fallbackEnabled) return;
  fallbackEnabled = true;
  v8.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
}

/**
 * Why the pattern is refused, or null. A simple structural scan of the source (escapes, classes and
 * group prefixes are skipped): a group repeated more than once (`*`, `+`, `{n,}`, `{n,m}` with m > 1)
 * whose body carries any quantifier. It refuses a few harmless patterns (`(\s?\w)+`), which can be
 * written without the nesting; it does not prove the others safe.
 */
export function nestedQuantifierProblem(source: string, flags = ''): string | null {
  const unicodeSets = flags.includes('v');
  /** Per open group: does its body contain a quantifier (directly or in a nested group)? */
  const groups: boolean[] = [false];
  /** What a quantifier at this point would repeat. */
  let last: 'none' | 'atom' | 'plain-group' | 'quantified-group' = 'none';
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\\') {
      i = skipEscape(source, i);
      last = 'atom';
      continue;
    }
    if (c === '[') {
      i = skipClass(source, i, unicodeSets);
      last = 'atom';
      continue;
    }
    if (c === '(') {
      groups.push(false);
      i = skipGroupPrefix(source, i + 1);
      last = 'none';
      continue;
    }
    if (c === ')') {
      const quantified = groups.length > 1 ? groups.pop()! : false;
      if (quantified) groups[groups.length - 1] = true;
      last = quantified ? 'quantified-group' : 'plain-group';
      i++;
      continue;
    }
    const quantifier = readQuantifier(source, i);
    if (quantifier) {
      if (last === 'quantified-group' && quantifier.max > 1) {
        return 'repeats a group that itself contains a quantifier (like `(\\w+\\s?)+`), which can take exponential time on some inputs (ReDoS); write it without the nesting (e.g. `[\\w\\s]+`)';
      }
      groups[groups.length - 1] = true;
      i = quantifier.end;
      last = 'none';
      continue;
    }
    last = c === '|' || c === '^' || c === '$' ? 'none' : 'atom';
    i++;
  }
  return null;
}

function skipEscape(source: string, at: number): number {
  const next = source[at + 1];
  // \p{…}, \P{…}, \u{…}, \k<…>: their braces are not a quantifier.
  if ((next === 'p' || next === 'P' || next === 'u') && source[at + 2] === '{') {
    const close = source.indexOf('}', at + 3);
    return close === -1 ? source.length : close + 1;
  }
  if (next === 'k' && source[at + 2] === '<') {
    const close = source.indexOf('>', at + 3);
    return close === -1 ? source.length : close + 1;
  }
  return at + 2;
}

/** Past the class opened at `at`; with the `v` flag classes nest. */
function skipClass(source: string, at: number, nested: boolean): number {
  let depth = 0;
  let i = at;
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\\') {
      i = skipEscape(source, i);
      continue;
    }
    if (c === '[' && (depth === 0 || nested)) depth++;
    else if (c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return i;
}

/** `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`, `(?<name>`, `(?i:` (modifiers): the `?` is no quantifier. */
function skipGroupPrefix(source: string, at: number): number {
  if (source[at] !== '?') return at;
  const next = source[at + 1];
  if (next === '<' && source[at + 2] !== '=' && source[at + 2] !== '!') {
    const close = source.indexOf('>', at + 2);
    return close === -1 ? source.length : close + 1;
  }
  if (next === '<') return at + 3;
  if (next === ':' || next === '=' || next === '!') return at + 2;
  const colon = source.indexOf(':', at + 1);
  return colon === -1 ? at + 1 : colon + 1;
}

function readQuantifier(source: string, at: number): { max: number; end: number } | null {
  const c = source[at];
  let max: number;
  let end: number;
  if (c === '*' || c === '+') [max, end] = [Infinity, at + 1];
  else if (c === '?') [max, end] = [1, at + 1];
  else if (c === '{') {
    const match = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at, at + 40));
    if (!match) return null; // a literal brace (without the u flag)
    max = match[2] === undefined ? Number(match[1]) : match[3] === '' ? Infinity : Number(match[3]);
    end = at + match[0].length;
  } else return null;
  if (source[end] === '?') end++; // lazy
  return { max, end };
}
