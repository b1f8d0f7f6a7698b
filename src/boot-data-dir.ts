/**
 * The data directory (TOLLGATE_DATA_DIR) before anything opens a file in it. It holds the embedded
 * database (keys' hashes, sessions, mail waiting to be sent — a password-reset link among them) and
 * the charge journal, so it is private to the gateway's user: created 0700, and narrowed to 0700 when
 * it exists with wider permissions (an outside check read a pending reset link from a 0644
 * `tollgate.db` in a 0755 directory as another local user, and took over the account with it).
 * A path that cannot be a directory is a configuration problem (exit 78), not a crash.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError } from './config/load-config.js';

export function prepareDataDir(dir: string, logger: Pick<Logger, 'info' | 'warn'>): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`env TOLLGATE_DATA_DIR: ${dir} cannot be created as a directory (${code})`]);
  }
  const stat = statSync(dir);
  if (!stat.isDirectory()) throw new ConfigError([`env TOLLGATE_DATA_DIR: ${dir} is not a directory`]);
  if ((stat.mode & 0o077) === 0) return;
  try {
    chmodSync(dir, 0o700);
    logger.info(
      { data_dir: dir },
      'the data directory was readable by other users; it is now private to its owner (0700)',
    );
  } catch (error) {
    logger.warn(
      { data_dir: dir, err: error },
      'the data directory is readable by other users and could not be made private: restrict it (chmod 700)',
    );
  }
}
