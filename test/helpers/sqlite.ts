import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SqliteTestFile {
  path: string;
  /** Removes the file with its WAL and shared-memory companions. */
  remove(): Promise<void>;
}

export async function createSqliteTestFile(): Promise<SqliteTestFile> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-test-'));
  return {
    path: join(dir, 'tollgate.db'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
