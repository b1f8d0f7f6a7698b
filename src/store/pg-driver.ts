import pg from 'pg';
import { TollgateError } from '../core/errors.js';
import {
  batchInTransaction,
  type RunResult,
  type SqlDriver,
  type SqlExecutor,
  type SqlParam,
  type SqlRow,
  type SqlStatement,
  type TransactionOptions,
} from './sql-driver.js';

export interface PgDriverOptions {
  /** Schema put first on `search_path` for every connection (tests use a throwaway one). */
  schema?: string;
  max?: number;
  connectionTimeoutMillis?: number;
  /**
   * How long one statement may wait for its answer (default 15 s; migrations have none). A connection
   * that went silent — a network partition, a failover that drops packets instead of closing — would
   * otherwise hold its statement until the kernel gives up on the socket (~15 min): a charge would
   * sit unapplied and unreported, and shutdown would wait for it. Past the deadline the statement
   * fails as `store.unavailable` and its connection is destroyed, not pooled. The server is told the
   * same (`statement_timeout` a second shorter, `idle_in_transaction_session_timeout`), so what we
   * gave up on does not run on there (sent as startup parameters: a PgBouncer in front needs
   * `ignore_startup_parameters` to list them).
   */
  statementTimeoutMs?: number;
}

const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
/** node-postgres's error for a statement past its `query_timeout`. */
const READ_TIMEOUT = /^Query read timeout$/;

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Per-pool parsers: the global `pg.types` belongs to every other pg user in the process. */
function bigintTypes(): pg.TypeOverrides {
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, 'text', (text: string) => BigInt(text));
  // Only integral numerics are expected (SUM over BIGINT); a fraction throws rather than being rounded.
  types.setTypeParser(NUMERIC_OID, 'text', (text: string) => BigInt(text));
  return types;
}

/** `?` → `$n`, leaving quoted strings and identifiers alone. */
export function toPgPlaceholders(sql: string): string {
  let out = '';
  let index = 0;
  let quote: string | null = null;
  for (const char of sql) {
    if (quote !== null) {
      if (char === quote) quote = null;
      out += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      out += char;
    } else if (char === '?') {
      index += 1;
      out += `$${index}`;
    } else {
      out += char;
    }
  }
  return out;
}

function toPg(value: SqlParam): string | number | null {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return value.toString();
  return value;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);
const CONNECTION_MESSAGES =
  /Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i;

/**
 * SQLSTATE classes in which the server refused the statement's own data: 22 (data exception), 23
 * (integrity constraint), 54 (program limit: an index row too large). Another row would pass, so a
 * charge refused so is tried alone and, refused alone, given up (billing/settler.ts). Every other
 * SQLSTATE is the database's state, not the row's — read-only (25006, a managed database whose disk
 * filled, a demoted primary), not accepting connections (55000), a lock timeout (55P03), a cancelled
 * statement (57014), insufficient resources (53: disk full, out of memory), serialization failures
 * (40), a missing privilege or table (42), an internal error (XX) — and reads as unavailable: the
 * charge waits in the journal for the database to take it, and paid requests are refused meanwhile,
 * instead of charges being dropped while answers go out.
 */
const ROW_REFUSAL_CLASSES = new Set(['22', '23', '54']);
const SQLSTATE = /^[0-9A-Z]{5}$/;

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  if (typeof code === 'string' && SQLSTATE.test(code) && !ROW_REFUSAL_CLASSES.has(code.slice(0, 2))) return true;
  if (error instanceof AggregateError && error.errors.some(isUnavailable)) return true;
  return CONNECTION_MESSAGES.test(error.message);
}

/**
 * PostgreSQL's text cannot hold a NUL character (22021 for a text parameter, 22P05 for `\u0000` in
 * jsonb), where SQLite's can: a caller's string with one in it is the caller's input error, not our
 * 500.
 */
const NUL_IN_TEXT = new Set(['22021', '22P05']);

function translateError(error: unknown): unknown {
  if (error instanceof TollgateError) return error;
  if (isUnavailable(error))
    return new TollgateError('store.unavailable', 'Storage is unavailable', {
      cause: error,
      metadata: { reason: 'store_unavailable' },
    });
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NUL_IN_TEXT.has(code))
    return new TollgateError('request.invalid_body', 'Text may not contain NUL characters (\\u0000)', {
      cause: error,
    });
  return error;
}

type Queryable = pg.Pool | pg.PoolClient;

/** A statement with node-postgres's per-query deadline (`query_timeout`, missing from its types); 0: none. */
function timed(text: string, values: unknown[] | undefined, timeoutMs: number): pg.QueryConfig {
  const config: pg.QueryConfig & { query_timeout?: number } = { text };
  if (values !== undefined) config.values = values;
  if (timeoutMs > 0) config.query_timeout = timeoutMs;
  return config;
}

export class PgDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;
  readonly #texts = new Map<string, string>();
  readonly #timeoutMs: number;

  constructor(connectionString: string, options: PgDriverOptions = {}) {
    if (options.schema !== undefined && !IDENTIFIER.test(options.schema)) {
      throw new RangeError(`schema "${options.schema}" is not a plain SQL identifier`);
    }
    this.#timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    // The server stops a statement a little before we give up on it, and a transaction left idle
    // (its client gone silent) after the deadline: a statement we gave up on must not run on, holding
    // its session (one more per timeout, past `max`) and its row locks.
    const serverMs = Math.max(100, this.#timeoutMs - 1000);
    this.#pool = new pg.Pool({
      connectionString,
      max: options.max ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
      statement_timeout: serverMs,
      idle_in_transaction_session_timeout: this.#timeoutMs,
      keepAlive: true,
      types: bigintTypes(),
      ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
    });
    // An idle client losing its connection emits here; without a listener the process would crash.
    this.#pool.on('error', () => undefined);
  }

  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    return this.#all(this.#pool, sql, params);
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.#run(this.#pool, sql, params);
  }

  exec(script: string): Promise<void> {
    return this.#exec(this.#pool, script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const timeoutMs = options.unbounded === true ? 0 : this.#timeoutMs;
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw translateError(error);
    }
    // A checked-out client has no pool listener: a server restart or a dropped connection between two
    // statements would be an unhandled 'error' event and kill the process. Ours spans the whole
    // checkout and is removed only as the client goes back to the pool (which re-adds its own).
    let lost: unknown = null;
    const onError = (error: unknown) => {
      lost ??= error;
    };
    client.on('error', onError);
    let open = true;
    const live = (): pg.PoolClient => {
      if (!open) throw new Error('transaction already finished');
      if (lost !== null) throw translateError(lost);
      return client;
    };
    // Statements issued without awaiting each other (SqlExecutor allows it) run one after another
    // here: node-postgres's own queue for a busy client is deprecated (gone in pg 9).
    let previous: Promise<unknown> = Promise.resolve();
    const inTurn = <R>(statement: () => Promise<R>): Promise<R> => {
      const result = previous.then(statement);
      previous = result.catch(() => undefined);
      return result;
    };
    const tx: SqlExecutor = {
      all: (sql, params) => inTurn(() => this.#all(live(), sql, params, timeoutMs)),
      run: (sql, params) => inTurn(() => this.#run(live(), sql, params, timeoutMs)),
      exec: (script) => inTurn(() => this.#exec(live(), script, timeoutMs)),
    };
    let broken: unknown;
    /** The first statement of this transaction that ran past its deadline. */
    let timedOut: Error | null = null;
    const noteTimeout = (error: unknown) => {
      const cause = error instanceof TollgateError ? error.cause : error;
      if (timedOut === null && cause instanceof Error && READ_TIMEOUT.test(cause.message)) timedOut = cause;
    };
    try {
      await this.#exec(client, 'BEGIN', timeoutMs);
      // A migration may build an index on a large table, or wait for another process's migration.
      if (options.unbounded === true)
        await this.#exec(
          client,
          'SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0',
          0,
        );
      const result = await fn(tx);
      await previous; // a statement issued and not awaited still belongs before COMMIT
      open = false;
      await this.#exec(client, 'COMMIT', timeoutMs);
      return result;
    } catch (error) {
      open = false; // statements still queued fail instead of running
      await previous; // the one in flight ends before ROLLBACK is sent
      noteTimeout(error);
      if (timedOut !== null) {
        // A statement past its deadline is still the connection's: ROLLBACK would queue behind it.
        // Destroying the connection ends the transaction on the server (never committed).
        broken = timedOut;
        throw error;
      }
      try {
        await client.query(timed('ROLLBACK', undefined, this.#timeoutMs));
      } catch (rollbackError) {
        broken = rollbackError; // the connection is unusable: destroy it rather than pool it
      }
      throw error;
    } finally {
      if (lost !== null && broken === undefined) broken = lost;
      client.removeListener('error', onError);
      client.release(
        broken instanceof Error ? broken : broken === undefined ? undefined : new Error('connection lost'),
      );
    }
  }

  batch(statements: readonly SqlStatement[]): Promise<SqlRow[][] | null> {
    return batchInTransaction(this, statements);
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }

  #text(sql: string): string {
    let text = this.#texts.get(sql);
    if (text === undefined) {
      text = toPgPlaceholders(sql);
      this.#texts.set(sql, text);
    }
    return text;
  }

  async #all(
    target: Queryable,
    sql: string,
    params: readonly SqlParam[] = [],
    timeoutMs = this.#timeoutMs,
  ): Promise<SqlRow[]> {
    try {
      const result = await target.query<SqlRow>(timed(this.#text(sql), params.map(toPg), timeoutMs));
      return result.rows;
    } catch (error) {
      throw translateError(error);
    }
  }

  async #run(
    target: Queryable,
    sql: string,
    params: readonly SqlParam[] = [],
    timeoutMs = this.#timeoutMs,
  ): Promise<RunResult> {
    try {
      const result = await target.query(timed(this.#text(sql), params.map(toPg), timeoutMs));
      return { changes: result.rowCount ?? 0 };
    } catch (error) {
      throw translateError(error);
    }
  }

  async #exec(target: Queryable, script: string, timeoutMs = this.#timeoutMs): Promise<void> {
    try {
      // No values: the simple protocol, which accepts several statements.
      await target.query(timed(script, undefined, timeoutMs));
    } catch (error) {
      throw translateError(error);
    }
  }
}

export function openPgDriver(connectionString: string, options: PgDriverOptions = {}): PgDriver {
  return new PgDriver(connectionString, options);
}
