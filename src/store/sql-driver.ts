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

/**
 * Statements run in the order they are issued. Inside a transaction, statements that do not depend
 * on each other's results may be issued without awaiting one another (and then awaited together):
 * the embedded store then sends them to its thread back to back instead of waiting for each reply.
 */
export interface SqlExecutor {
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
  /** Runs a parameterless script that may hold several statements (migrations). */
  exec(script: string): Promise<void>;
}

export interface SqlStatement {
  sql: string;
  params: readonly SqlParam[];
  /** The rows it must return (an INSERT … RETURNING that must insert every row it was given). */
  expectRows?: number;
}

export interface TransactionOptions {
  /**
   * No statement deadline (a migration building an index on a large table, or waiting for another
   * process's migration): without it each statement of a network database has one (pg-driver.ts).
   */
  unbounded?: boolean;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: SqlDialect;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it rejects. Only `tx`
   * may be used inside `fn`; calling the driver itself there would wait for the transaction to end.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs `statements` in one transaction, in one go (on the embedded store, one round trip to its
   * thread). Resolves with each statement's rows once committed — or with `null`, rolled back and
   * nothing written, when a statement returned other than the rows it expected.
   */
  batch(statements: readonly SqlStatement[]): Promise<SqlRow[][] | null>;
  close(): Promise<void>;
}

const UNEXPECTED_ROWS = Symbol('unexpected rows');

/** `SqlDriver.batch` as a transaction of one statement after the other (for drivers with nothing faster). */
export async function batchInTransaction(
  driver: Pick<SqlDriver, 'transaction'>,
  statements: readonly SqlStatement[],
): Promise<SqlRow[][] | null> {
  try {
    return await driver.transaction(async (tx) => {
      const results: SqlRow[][] = [];
      for (const { sql, params, expectRows } of statements) {
        const rows = await tx.all(sql, params);
        if (expectRows !== undefined && rows.length !== expectRows) throw UNEXPECTED_ROWS;
        results.push(rows);
      }
      return results;
    });
  } catch (error) {
    if (error === UNEXPECTED_ROWS) return null;
    throw error;
  }
}

/** `(?, ?, ?)` — for building multi-row VALUES lists. */
export function placeholderTuple(width: number): string {
  return `(${Array.from({ length: width }, () => '?').join(', ')})`;
}

/** The texts of `placeholderRows`, by width and row count (a settle batch asks for the same few). */
const rowLists = new Map<number, Map<number, string>>();
const MAX_CACHED_ROWS = 1024;

/** `(?, ?), (?, ?), (?, ?)` — `rows` tuples of `width`: a multi-row VALUES list, built once per shape. */
export function placeholderRows(width: number, rows: number): string {
  let byCount = rowLists.get(width);
  if (byCount === undefined) rowLists.set(width, (byCount = new Map()));
  let text = byCount.get(rows);
  if (text === undefined) {
    text = Array.from({ length: rows }, () => placeholderTuple(width)).join(', ');
    if (rows <= MAX_CACHED_ROWS) byCount.set(rows, text);
  }
  return text;
}
