/**
 * Text the stores keep as sent: no NUL (PostgreSQL refuses it; SQLite cut a value there when read
 * back) and no unpaired surrogate (stored as U+FFFD, so two different values became one). Checked on
 * every validated body and query (http/parse-body.ts, pipeline/activity.ts's parseQuery).
 */
const NUL = '\u0000';
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The first string (value or key) that is not storable text, with where it is; null if none. */
export function findBadText(value: unknown, path: PropertyKey[]): { path: PropertyKey[]; nul: boolean } | null {
  if (typeof value === 'string') {
    if (value.includes(NUL)) return { path, nul: true };
    return UNPAIRED_SURROGATE.test(value) ? { path, nul: false } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = findBadText(value[i], [...path, i]);
      if (bad) return bad;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const bad = findBadText(key, [...path, key]) ?? findBadText(item, [...path, key]);
      if (bad) return bad;
    }
  }
  return null;
}
