/**
 * The one seam between the store and a database library. SQL is written once, with `?` placeholders;
 * each driver adapts it (PostgreSQL rewrites to `$1..$n`). Integer columns come back as bigint on
 * SQLite and as bigint (int8/numeric) or number (int4) on PostgreSQL: row mappers coerce explicitly.
 */
export type SqlDialect = 'sqlite' | 'postgres';

/** Booleans are bound as 0/1: the schema stores them as INTEGER on both dialects. */
export type SqlParam = bigint | number | string | boolean | null;

export type SqlRow = Readonly<Record<string, unknown>>;

export interface RunResult {
  changes: number;
}

export interface SqlExecutor {
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
  /** Runs a parameterless script that may hold several statements (migrations). */
  exec(script: string): Promise<void>;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: SqlDialect;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it rejects. Only `tx`
   * may be used inside `fn`; calling the driver itself there would wait for the transaction to end.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** `(?, ?, ?)` — for building multi-row VALUES lists. */
export function placeholderTuple(width: number): string {
  return `(${Array.from({ length: width }, () => '?').join(', ')})`;
}
