/**
 * Which journal file belongs to this process. Several gateway processes may share one data
 * directory (the default `./data`), so each takes a numbered *slot*: `slot-<n>.journal`, guarded by
 * `slot-<n>.lock`. The lock is a kernel file lock (SQLite's exclusive lock on a tiny database, held
 * for the life of the process): the kernel drops it when the process dies, `kill -9` included, so a
 * dead process's slot is free again at once and its journal can be taken over — no PID files, no
 * stale-lock guessing.
 */
import { join } from 'node:path';
import Database from 'libsql';

const MAX_SLOTS = 256;

export interface SlotLock {
  slot: number;
  journalPath: string;
  release(): void;
}

export function slotJournalPath(dir: string, slot: number): string {
  return join(dir, `slot-${slot}.journal`);
}

/** The lock of slot `slot`, or null when another live process holds it. */
export function tryLockSlot(dir: string, slot: number): SlotLock | null {
  const db = new Database(join(dir, `slot-${slot}.lock`));
  try {
    db.exec('PRAGMA busy_timeout = 0');
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return null;
    throw error;
  }
  let released = false;
  return {
    slot,
    journalPath: slotJournalPath(dir, slot),
    release() {
      if (released) return;
      released = true;
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

/** The first free slot of the directory. */
export function claimSlot(dir: string): SlotLock {
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    const lock = tryLockSlot(dir, slot);
    if (lock) return lock;
  }
  throw new Error(`every one of the ${MAX_SLOTS} journal slots in ${dir} is held by a live process`);
}

/** Slot numbers that have a journal file in the directory. */
export function slotsWithJournals(names: readonly string[]): number[] {
  const slots: number[] = [];
  for (const name of names) {
    const match = /^slot-(\d+)\.journal$/.exec(name);
    if (match) slots.push(Number(match[1]));
  }
  return slots.sort((a, b) => a - b);
}
