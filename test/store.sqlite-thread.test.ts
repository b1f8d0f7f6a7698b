/**
 * The embedded store's connection runs on its own thread (store/sqlite-driver.ts): statements never
 * block the event loop, values and errors cross the thread boundary intact, a database that cannot
 * be opened is "store unavailable" (not a crash), and an idle driver does not keep a process alive.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'libsql';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTollgateError } from '../src/core/errors.js';
import { openSqliteDriver, type SqliteDriver } from '../src/store/sqlite-driver.js';
import { buildOnce, ROOT } from './helpers/process.js';
import { createSqliteTestFile, type SqliteTestFile } from './helpers/sqlite.js';

let file: SqliteTestFile;
let driver: SqliteDriver;

afterEach(async () => {
  await driver?.close();
  await file?.remove();
});

async function open(): Promise<SqliteDriver> {
  file = await createSqliteTestFile();
  driver = openSqliteDriver(file.path);
  await driver.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, flag INTEGER, r REAL, s TEXT)');
  return driver;
}

describe('the SQLite thread', { timeout: 60_000 }, () => {
  it('runs a statement while the event loop goes on: a timer fires before a long query returns', async () => {
    const db = await open();
    const order: string[] = [];
    const query = db
      .all(
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c',
      )
      .then((rows) => {
        order.push('query');
        return rows;
      });
    setTimeout(() => order.push('timer'), 1);
    const rows = await query;
    expect(rows[0]!.n).toBe(3_000_000n);
    expect(order).toEqual(['timer', 'query']);
  });

  it('binds integers as INTEGER, booleans as 0/1, fractions as REAL, and returns integers as bigint', async () => {
    const db = await open();
    await db.run('INSERT INTO t (id, n, flag, r, s) VALUES (?, ?, ?, ?, ?)', ['a', 42, true, 1.5, null]);
    await db.run('INSERT INTO t (id, n, flag, r, s) VALUES (?, ?, ?, ?, ?)', ['b', 2n ** 62n, false, 2, 'x']);
    const rows = await db.all('SELECT id, n, typeof(n) AS nt, flag, r, typeof(r) AS rt, s FROM t ORDER BY id');
    expect(rows).toEqual([
      { id: 'a', n: 42n, nt: 'integer', flag: 1n, r: 1.5, rt: 'real', s: null },
      { id: 'b', n: 2n ** 62n, nt: 'integer', flag: 0n, r: 2, rt: 'real', s: 'x' },
    ]);
  });

  it('returns SQLite errors with their code, and keeps working after one', async () => {
    const db = await open();
    await db.run('INSERT INTO t (id) VALUES (?)', ['a']);
    const error = await db.run('INSERT INTO t (id) VALUES (?)', ['a']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
    await expect(db.all('SELECT nonsense FROM t')).rejects.toThrow(/nonsense/);
    expect(await db.run('INSERT INTO t (id) VALUES (?)', ['b'])).toEqual({ changes: 1 });
  });

  it('rolls a failed transaction back on the thread, and commits a good one', async () => {
    const db = await open();
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO t (id) VALUES (?)', ['gone']);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    const kept = await db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (id) VALUES (?)', ['kept']);
      return (await tx.all('SELECT count(*) AS n FROM t'))[0]!.n;
    });
    expect(kept).toBe(1n);
    expect(await db.all('SELECT id FROM t')).toEqual([{ id: 'kept' }]);
  });

  it('a database that cannot be opened answers "store unavailable" to every statement', async () => {
    file = await createSqliteTestFile();
    driver = openSqliteDriver(join(file.path, 'missing-directory', 'tollgate.db'));
    for (let i = 0; i < 2; i++) {
      const error = await driver.all('SELECT 1').catch((e: unknown) => e);
      expect(isTollgateError(error) && error.code === 'store.unavailable').toBe(true);
    }
  });

  it('says whether it opened the database, and why not', async () => {
    await open();
    await expect(driver.opened()).resolves.toBeUndefined();
    await driver.close();
    await writeFile(file.path, randomBytes(8192)); // not a database any more
    driver = openSqliteDriver(file.path);
    const error = await driver.opened().catch((e: unknown) => e);
    expect(isTollgateError(error) && error.code === 'store.unavailable').toBe(true);
    expect((error as Error).message).toBe(`The embedded store cannot open ${file.path}: file is not a database`);
  });

  it('opens a file another connection is writing to: switching to WAL waits for the lock instead of failing', async () => {
    // A second instance or process starting on the same file can hold the write lock while this
    // connection switches the file to WAL; SQLite refuses that switch at once, without its busy handler.
    file = await createSqliteTestFile();
    const other = new Database(file.path);
    try {
      other.exec('CREATE TABLE t (n INTEGER)');
      other.exec('BEGIN IMMEDIATE');
      other.exec('INSERT INTO t VALUES (1)');
      driver = openSqliteDriver(file.path);
      const opened = driver.opened().then(
        () => 'opened',
        (error: unknown) => (error as Error).message,
      );
      await sleep(150);
      other.exec('COMMIT');
      expect(await opened).toBe('opened');
      expect(await driver.all('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      expect(await driver.all('SELECT n FROM t')).toEqual([{ n: 1n }]);
    } finally {
      other.close();
    }
  });
});

describe('an idle driver', { timeout: 180_000 }, () => {
  beforeAll(() => buildOnce(), 180_000);

  it('does not keep the process alive, and one with a statement in flight does until it answers', async () => {
    file = await createSqliteTestFile();
    const script = `
      const { openSqliteDriver } = await import(${JSON.stringify(join(ROOT, 'dist/store/sqlite-driver.js'))});
      const driver = openSqliteDriver(${JSON.stringify(file.path)});
      await driver.exec('CREATE TABLE t (n INTEGER)');
      // Nothing else keeps this process alive: the reply must, and once it came, nothing must.
      driver.run('INSERT INTO t (n) VALUES (?)', [7]).then((r) => console.log('changes', r.changes));
    `;
    const scriptFile = join(dirname(file.path), 'idle-driver.mjs');
    await writeFile(scriptFile, script);
    const { stdout } = await promisify(execFile)(process.execPath, [scriptFile], { timeout: 30_000 });
    expect(stdout.trim()).toBe('changes 1');
    driver = openSqliteDriver(file.path);
    expect(await driver.all('SELECT n FROM t')).toEqual([{ n: 7n }]);
  });
});
