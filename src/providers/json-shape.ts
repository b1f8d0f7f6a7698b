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

/** A token count: a finite non-negative number, rounded; anything else is null. */
export function countOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;
}
