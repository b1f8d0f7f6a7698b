import type { SqlParam } from './sql-driver.js';

/**
 * Coercions from driver values to domain types. SQLite returns every integer as bigint; PostgreSQL
 * returns int8/numeric as bigint and int4 as number. Anything else is a schema bug and throws.
 */
function fail(what: string, value: unknown): never {
  throw new TypeError(`expected ${what}, got ${typeof value} ${String(value)}`);
}

export function asBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  return fail('an integer', value);
}

export function asNullableBigInt(value: unknown): bigint | null {
  return value === null || value === undefined ? null : asBigInt(value);
}

/** Up to 15 digits: always a safe integer, read without going through a bigint. */
const SHORT_NATURAL = /^\d{1,15}$/;

/** For counts and timestamps, which the domain types keep as number. */
export function asNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && SHORT_NATURAL.test(value)) return Number(value);
  const big = asBigInt(value);
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER))
    return fail('a safe integer', value);
  return Number(big);
}

export function asNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : asNumber(value);
}

export function asString(value: unknown): string {
  return typeof value === 'string' ? value : fail('a string', value);
}

export function asNullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : asString(value);
}

export function asBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  return asBigInt(value) !== 0n;
}

export function asNullableStringArray(value: unknown): string[] | null {
  if (value === null || value === undefined) return null;
  const parsed: unknown = JSON.parse(asString(value));
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string'))
    return fail('a JSON string array', value);
  return parsed;
}

export function stringArrayToJson(value: readonly string[] | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

/** Column and conversion of each patchable field. */
export type PatchColumns<P> = { [F in keyof Required<P>]: { column: string; toParam: (value: never) => SqlParam } };

/** `SET` assignments for the fields present in a patch (undefined means "leave as is"). */
export function patchAssignments<P extends object>(
  columns: PatchColumns<P>,
  patch: P,
): { assignments: string[]; params: SqlParam[] } {
  const assignments: string[] = [];
  const params: SqlParam[] = [];
  for (const field of Object.keys(columns) as (keyof P)[]) {
    const value = patch[field];
    if (value === undefined) continue;
    const spec = columns[field] as { column: string; toParam: (value: unknown) => SqlParam };
    assignments.push(`${spec.column} = ?`);
    params.push(spec.toParam(value));
  }
  return { assignments, params };
}
