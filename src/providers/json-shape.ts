/**
 * Small readers for untrusted upstream JSON. Adapters validate by hand rather than with a schema
 * library because they run once per stream chunk on the hot path.
 */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * A token count: a non-negative whole number; anything else (a fraction too: 0.4 is no count, and
 * rounding it would make delivered text free) is null, unknown — charged at our estimate.
 */
export function countOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
}

/**
 * `JSON.parse` of an upstream's text, without `__proto__` keys: JSON.parse makes them ordinary own
 * properties, which we would relay, and which a caller merging our answer into an object (Fastify
 * refuses them from callers for the same reason) would take as that object's prototype. The walk runs
 * only when the text could hold one: the key written out, or any `\u` escape.
 */
export function parseUpstreamJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (typeof value === 'object' && value !== null && (text.includes('__proto__') || text.includes('\\u')))
    dropProtoKeys(value, 0);
  return value;
}

function dropProtoKeys(value: object, depth: number): void {
  if (depth > MAX_JSON_DEPTH) return;
  if (Array.isArray(value)) {
    for (const item of value as unknown[])
      if (typeof item === 'object' && item !== null) dropProtoKeys(item, depth + 1);
    return;
  }
  const record = value as Record<string, unknown>;
  if (Object.hasOwn(record, '__proto__')) delete record['__proto__'];
  for (const key of Object.keys(record)) {
    const item = record[key];
    if (typeof item === 'object' && item !== null) dropProtoKeys(item, depth + 1);
  }
}

/** Deeper than this, an upstream's JSON is refused: no real answer comes close, and re-serialising it could overflow the stack. */
export const MAX_JSON_DEPTH = 256;
/** JSON text shorter than this cannot nest deeper than MAX_JSON_DEPTH (each level takes two characters). */
const DEPTH_CHECK_FROM = 2 * MAX_JSON_DEPTH;

/**
 * Whether JSON text nests objects and arrays deeper than MAX_JSON_DEPTH. JSON.parse takes any depth,
 * but a few thousand levels (~30 KB) overflow the stack of every recursive walk after it —
 * JSON.stringify of a tool's arguments, of a relayed chunk. One pass over the text, brackets inside
 * strings skipped; short texts are not scanned at all.
 */
export function nestsTooDeeply(text: string): boolean {
  if (text.length <= DEPTH_CHECK_FROM) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
