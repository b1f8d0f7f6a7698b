/**
 * The embedded store's driver. The SQLite connection lives on its own thread (store/sqlite-thread.js):
 * libsql's API is synchronous, and a statement run on the event loop — above all a COMMIT waiting
 * for its fsync (`synchronous = FULL`: a charge is on disk before the request reports done) — would
 * stop every request in the process while it runs. Here each statement is a message to that thread
 * and a reply; the event loop only copies parameters and rows.
 *
 * The thread runs requests in the order they arrive, one at a time. A transaction is BEGIN, its
 * statements and COMMIT sent in turn, so a statement from elsewhere could land between them: one
 * mutex per database file per process closes that gap (while a transaction is open every other
 * statement on that file, from any driver instance, waits). Sharing it across instances also keeps
 * a second connection's BEGIN IMMEDIATE from waiting out its busy timeout on a lock held by a
 * transaction of this process.
 *
 * The thread keeps the process alive only while a request is in flight. Should it ever die, the
 * requests in flight fail as "store unavailable" and the next request starts a new one.
 */
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { TollgateError } from '../core/errors.js';
import { AsyncMutex } from './async-mutex.js';
import type { RunResult, SqlDriver, SqlExecutor, SqlParam, SqlRow, SqlStatement } from './sql-driver.js';
import { OPENED_ID, type SqliteReply, type SqliteRequest, type SqliteThreadOptions } from './sqlite-protocol.js';

const THREAD_FILE = new URL('./sqlite-thread.js', import.meta.url);

const fileMutexes = new Map<string, { mutex: AsyncMutex; users: number }>();

function claimMutex(key: string | null): AsyncMutex {
  if (key === null) return new AsyncMutex();
  const entry = fileMutexes.get(key) ?? { mutex: new AsyncMutex(), users: 0 };
  entry.users += 1;
  fileMutexes.set(key, entry);
  return entry.mutex;
}

function releaseMutex(key: string | null): void {
  if (key === null) return;
  const entry = fileMutexes.get(key);
  if (!entry) return;
  entry.users -= 1;
  if (entry.users <= 0) fileMutexes.delete(key);
}

/**
 * The database's state, not the statement's data (see pg-driver.ts, ROW_REFUSAL_CLASSES): a charge
 * failing so waits in the journal instead of being given up as refused.
 */
const UNAVAILABLE_CODES =
  /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|CORRUPT|NOTADB|NOMEM|INTERRUPT|PERM|PROTOCOL|NOLFS|AUTH)/;

function errorOf(reply: { message: string; code: string | null }): Error {
  const error = Object.assign(new Error(reply.message), reply.code === null ? {} : { code: reply.code });
  if (reply.code !== null && UNAVAILABLE_CODES.test(reply.code)) {
    return new TollgateError('store.unavailable', 'Storage is unavailable', {
      cause: error,
      metadata: { reason: 'store_unavailable' },
    });
  }
  return error;
}

/** A request before the thread object numbers it (`Omit` taken member by member of the union). */
type Request = SqliteRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

interface InFlight {
  id: number;
  resolve: (reply: SqliteReply & { ok: true }) => void;
  reject: (error: unknown) => void;
  next: InFlight | null;
}

/**
 * The requests sent and not answered yet, oldest first. The thread answers in the order it was asked,
 * so a reply is the oldest's; a queue of nodes instead of a Map keyed by id, whose table would be
 * rebuilt in the old generation every few statements (core/live-list.ts says why that matters).
 */
class InFlightQueue {
  private head: InFlight | null = null;
  private tail: InFlight | null = null;
  size = 0;

  push(entry: InFlight): void {
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
    this.size += 1;
  }

  /** The entry answered by `id` (the oldest, unless the thread broke its order), taken out of the queue. */
  take(id: number): InFlight | null {
    let before: InFlight | null = null;
    for (let entry = this.head; entry; before = entry, entry = entry.next) {
      if (entry.id !== id) continue;
      if (before) before.next = entry.next;
      else this.head = entry.next;
      if (this.tail === entry) this.tail = before;
      entry.next = null;
      this.size -= 1;
      return entry;
    }
    return null;
  }

  /** Every entry, oldest first, leaving the queue empty. */
  drain(): InFlight[] {
    const entries: InFlight[] = [];
    for (let entry = this.head; entry; entry = entry.next) entries.push(entry);
    this.head = null;
    this.tail = null;
    this.size = 0;
    return entries;
  }
}

/** One connection's thread: requests in, replies out, matched by id. */
class SqliteThread {
  readonly #worker: Worker;
  readonly #inFlight = new InFlightQueue();
  #nextId = OPENED_ID + 1;
  #exited = false;
  /** Whether the database opened; the thread is held open (ref'd) until it says. */
  readonly opened: Promise<void>;
  #openedSaid = false;

  constructor(options: SqliteThreadOptions) {
    let said: (error: Error | null) => void = () => undefined;
    this.opened = new Promise<void>((resolve, reject) => {
      said = (error) => (error ? reject(error) : resolve());
    });
    this.opened.catch(() => undefined); // a failed open also answers every request
    const sayOpened = (error: Error | null) => {
      if (this.#openedSaid) return;
      this.#openedSaid = true;
      if (this.#inFlight.size === 0) this.#worker.unref();
      said(error);
    };
    this.#worker = new Worker(THREAD_FILE, { workerData: options, stdout: false, stderr: false });
    this.#worker.on('message', (reply: SqliteReply) => {
      if (reply.id !== OPENED_ID) this.#settle(reply);
      else sayOpened(reply.ok ? null : new Error(reply.message));
    });
    this.#worker.on('error', (error) => this.#fail(error));
    this.#worker.on('exit', (code) => {
      this.#exited = true;
      const exited = new Error(`the SQLite thread exited with code ${code}`);
      sayOpened(exited);
      this.#fail(exited);
    });
  }

  get alive(): boolean {
    return !this.#exited;
  }

  send(request: Request): Promise<SqliteReply & { ok: true }> {
    if (this.#exited) return Promise.reject(this.#unavailable(new Error('the SQLite thread has exited')));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#inFlight.size === 0) this.#worker.ref();
      this.#inFlight.push({ id, resolve, reject, next: null });
      this.#worker.postMessage({ id, ...request });
    });
  }

  async terminate(): Promise<void> {
    if (!this.#exited) await this.#worker.terminate();
  }

  #settle(reply: SqliteReply): void {
    const waiting = this.#inFlight.take(reply.id);
    if (!waiting) return;
    if (this.#inFlight.size === 0 && this.#openedSaid) this.#worker.unref();
    if (reply.ok) waiting.resolve(reply);
    else waiting.reject(errorOf(reply));
  }

  #fail(cause: unknown): void {
    const waiting = this.#inFlight.drain();
    if (this.#openedSaid) this.#worker.unref();
    for (const { reject } of waiting) reject(this.#unavailable(cause));
  }

  #unavailable(cause: unknown): TollgateError {
    return new TollgateError('store.unavailable', 'Storage is unavailable', {
      cause,
      metadata: { reason: 'store_unavailable' },
    });
  }
}

export interface SqliteDriverOptions {
  /** Milliseconds a writer waits for another process's lock. */
  busyTimeoutMs?: number;
}

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  readonly #options: SqliteThreadOptions;
  #thread: SqliteThread;
  #closed = false;
  readonly #mutexKey: string | null;
  readonly #mutex: AsyncMutex;

  constructor(path: string, options: SqliteDriverOptions = {}) {
    const inMemory = path === ':memory:' || path === '';
    this.#mutexKey = inMemory ? null : resolve(path);
    this.#options = { path, busyTimeoutMs: options.busyTimeoutMs ?? 5000 };
    this.#thread = new SqliteThread(this.#options);
    this.#mutex = claimMutex(this.#mutexKey);
  }

  all(sql: string, params: readonly SqlParam[] = []): Promise<SqlRow[]> {
    return this.#outsideTransaction(() => this.#all(sql, params, false));
  }

  run(sql: string, params: readonly SqlParam[] = []): Promise<RunResult> {
    return this.#outsideTransaction(() => this.#run(sql, params, false));
  }

  exec(script: string): Promise<void> {
    return this.#outsideTransaction(() => this.#exec(script, false));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#mutex.runExclusive(async () => {
      // Not awaited: the first statement follows it to the thread at once (and fails if it failed).
      const begun = this.#exec('BEGIN IMMEDIATE', false).then(
        () => null,
        (error: unknown) => error,
      );
      let open = true;
      const guard = <R>(action: () => Promise<R>): Promise<R> =>
        open ? action() : Promise.reject(new Error('transaction already finished'));
      const tx: SqlExecutor = {
        all: (sql, params = []) => guard(() => this.#all(sql, params, true)),
        run: (sql, params = []) => guard(() => this.#run(sql, params, true)),
        exec: (script) => guard(() => this.#exec(script, true)),
      };
      try {
        const result = await fn(tx);
        open = false;
        const notBegun = await begun;
        if (notBegun !== null) throw notBegun;
        await this.#exec('COMMIT', true);
        return result;
      } catch (error) {
        open = false;
        await this.#send({ op: 'rollback' }).catch(() => undefined);
        throw (await begun) ?? error;
      }
    });
  }

  /**
   * Resolves once the thread has opened the database; rejects, saying why, when it could not (a
   * file that is not a database, a directory that does not exist or cannot be written). Statements
   * need not wait for it; a boot that must not start on a broken file does.
   */
  async opened(): Promise<void> {
    try {
      await this.#thread.opened;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TollgateError('store.unavailable', `The embedded store cannot open ${this.#options.path}: ${reason}`, {
        cause: error,
      });
    }
  }

  batch(statements: readonly SqlStatement[]): Promise<SqlRow[][] | null> {
    // Under the mutex: no transaction of this process may be open on the file when the thread runs BEGIN.
    return this.#mutex.runExclusive(async () => {
      const reply = await this.#send({ op: 'batch', statements });
      return 'results' in reply ? reply.results : null;
    });
  }

  async close(): Promise<void> {
    await this.#mutex.runExclusive(async () => {
      if (this.#closed) return;
      this.#closed = true;
      await this.#thread.send({ op: 'close' }).catch(() => undefined);
      await this.#thread.terminate();
      releaseMutex(this.#mutexKey);
    });
  }

  /** With no transaction open anywhere on this file, a statement goes straight to the thread. */
  #outsideTransaction<R>(action: () => Promise<R>): Promise<R> {
    return this.#mutex.locked ? this.#mutex.runExclusive(action) : action();
  }

  #send(request: Request): Promise<SqliteReply & { ok: true }> {
    if (this.#closed) return Promise.reject(new Error('the store is closed'));
    if (!this.#thread.alive) this.#thread = new SqliteThread(this.#options);
    return this.#thread.send(request);
  }

  async #all(sql: string, params: readonly SqlParam[], tx: boolean): Promise<SqlRow[]> {
    const reply = await this.#send({ op: 'all', sql, params, tx });
    return 'rows' in reply ? reply.rows : [];
  }

  async #run(sql: string, params: readonly SqlParam[], tx: boolean): Promise<RunResult> {
    const reply = await this.#send({ op: 'run', sql, params, tx });
    return { changes: 'changes' in reply ? reply.changes : 0 };
  }

  async #exec(script: string, tx: boolean): Promise<void> {
    await this.#send({ op: 'exec', sql: script, tx });
  }
}

export function openSqliteDriver(path: string, options: SqliteDriverOptions = {}): SqliteDriver {
  return new SqliteDriver(path, options);
}
