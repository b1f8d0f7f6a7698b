/**
 * The charge journal: a local append-only file where every charge is written before the caller
 * hears "done", and made durable (fsync) whenever the store has not committed it by then (see
 * billing/settler.ts). Entries are applied to the store by the settler (idempotently, on the
 * generation id) and removed only after their charge is committed.
 *
 * - Group commit: appends queued while a write is in flight go out together, with one `fdatasync`
 *   when any of them asks for it; the write and the sync run on libuv's thread pool, so the event
 *   loop never blocks on disk.
 * - Positional writes at the end of the verified prefix: a write that failed half-way is simply
 *   overwritten by the next one, so whole records always form a prefix of the file (see journal-codec).
 * - Compaction rewrites the live entries into a fresh file (temp file, fsync, rename, fsync of the
 *   directory) once the file is mostly dead records.
 * - At open, the process's own slot (see journal-slot.ts) and every orphaned slot of a dead process
 *   are read; a stream checkpoint with no final charge becomes that stream's charge (its process is
 *   gone: the checkpoint is what was delivered).
 * - A charge the store refuses outright (not an outage) leaves the journal but is kept, one JSON line
 *   each, in `refused.jsonl` beside it (`keepRefused`), for the operator to apply by hand.
 */
import { closeSync, mkdirSync, openSync, fsyncSync, writeSync } from 'node:fs';
import { open, readFile, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Settlement } from '../store/types.js';
import { decodeRecords, encodeRecord, jsonOf, type JournalRecord } from './journal-codec.js';
import { claimSlot, slotJournalPath, slotsWithJournals, tryLockSlot, type SlotLock } from './journal-slot.js';

export interface JournalEntry {
  id: string;
  kind: 'charge' | 'checkpoint';
  settlement: Settlement;
  /** When the entry was first journaled (epoch ms): the oldest-entry-age metric. */
  at: number;
  /** Encoded size, for the compaction heuristic. */
  bytes: number;
}

export interface JournalOpenReport {
  slot: number;
  /** Live entries found (own slot and adopted orphans). */
  recovered: number;
  /** Checkpoints of cut streams turned into their charges. */
  checkpointsCharged: number;
  /** Orphaned slots of dead processes taken over. */
  adoptedSlots: number[];
  /** Torn or damaged tails ignored, per file. */
  damagedTails: { file: string; reason: string; ignoredBytes: number }[];
}

export interface ChargeJournalOptions {
  now: () => number;
  /** The file is compacted when it is larger than this and mostly dead records. Default 4 MiB. */
  compactMinBytes?: number;
}

interface Waiter {
  buffer: Buffer;
  durable: boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const DEFAULT_COMPACT_MIN_BYTES = 4 * 1024 * 1024;
const REFUSED_FILE = 'refused.jsonl';

/**
 * What the caller of a refused charge's request was told (`keepRefused`): `failed` — its request
 * ended with an error (a non-streamed caller got no answer; a streamed one may have read the answer's
 * text before the error that ended it); `done` — the charge had counted as durable (the store was
 * out) and the caller was served and told the request completed; `unknown` — an earlier process
 * journaled it (recovered at boot), and what its caller heard is not known.
 */
export type RefusedCaller = 'failed' | 'done' | 'unknown';
const PROBE_BLOCK = Buffer.alloc(16 * 1024);
const EMPTY = Buffer.alloc(0);

function fsyncDirectory(path: string): void {
  try {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic.
  }
}

export class ChargeJournal {
  private readonly entries = new Map<string, JournalEntry>();
  private queue: Waiter[] = [];
  private writing: Promise<void> | null = null;
  private size: number;
  private liveBytes = 0;
  /** Checkpoint writes in flight, per generation id. */
  private readonly checkpointing = new Map<string, number>();
  /** Ids marked done while one of their checkpoints was being written (it must not come back live). */
  private readonly doneWhileCheckpointing = new Set<string>();
  private closed = false;
  /** False after a write or sync failed, until one succeeds again (readiness, admission). */
  private lastWriteOk = true;
  private lastError: unknown = null;
  private probeOk = true;
  private probeTurn = 0;
  /** fdatasync calls so far (group commit: one per batch of concurrent appends). */
  syncs = 0;

  private constructor(
    private readonly lock: SlotLock,
    private handle: FileHandle,
    size: number,
    private readonly options: ChargeJournalOptions,
  ) {
    this.size = size;
  }

  /** Where `keepRefused` writes: `refused.jsonl` in the journal's directory. */
  get refusedPath(): string {
    return join(dirname(this.lock.journalPath), REFUSED_FILE);
  }

  /**
   * Keeps a charge the store refused outright (billing/settler.ts gives it up so it cannot block the
   * rest): one line `{ at, reason, caller, record }` appended to `refused.jsonl` and synced before
   * the entry leaves the journal (and, when this line created the file, the directory too).
   * `caller` says what the request's caller was told (`RefusedCaller`); `record` is the journal's
   * own record (bigints as `{ "$big": "…" }`). Rare, so written synchronously. False when the file
   * could not be written (the caller logs the charge).
   */
  keepRefused(settlement: Settlement, reason: string, caller: RefusedCaller): boolean {
    const at = this.options.now();
    const line = `{"at":${at},"reason":${JSON.stringify(reason)},"caller":"${caller}","record":${jsonOf({ t: 'charge', s: settlement, at })}}\n`;
    try {
      let created = true;
      let fd: number;
      try {
        fd = openSync(this.refusedPath, 'ax', 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        created = false;
        fd = openSync(this.refusedPath, 'a', 0o600);
      }
      try {
        writeSync(fd, line);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      // A new file's name is in the directory only once the directory is synced.
      if (created) fsyncDirectory(dirname(this.refusedPath));
      return true;
    } catch {
      return false;
    }
  }

  /** Claims a slot in `dir`, recovers its entries and those of dead processes' slots, and rewrites them into a fresh file. */
  static async open(
    dir: string,
    options: ChargeJournalOptions,
  ): Promise<{ journal: ChargeJournal; report: JournalOpenReport }> {
    mkdirSync(dir, { recursive: true });
    const lock = claimSlot(dir);
    const report: JournalOpenReport = {
      slot: lock.slot,
      recovered: 0,
      checkpointsCharged: 0,
      adoptedSlots: [],
      damagedTails: [],
    };
    const adopted: SlotLock[] = [];
    try {
      const records: JournalRecord[] = [...(await readJournalFile(lock.journalPath, report))];
      for (const slot of slotsWithJournals(await readdir(dir))) {
        if (slot === lock.slot) continue;
        const orphan = tryLockSlot(dir, slot);
        if (!orphan) continue; // a live process owns it
        adopted.push(orphan);
        report.adoptedSlots.push(slot);
        records.push(...(await readJournalFile(orphan.journalPath, report)));
      }
      const live = foldRecords(records);
      for (const entry of live.values()) {
        if (entry.kind === 'checkpoint') {
          // Its process is dead (we hold its slot): the last checkpoint is what the stream delivered.
          entry.kind = 'charge';
          report.checkpointsCharged += 1;
        }
      }
      report.recovered = live.size;
      const handle = await writeFresh(
        lock.journalPath,
        [...live.values()].map((e) => ({ t: 'charge', s: e.settlement, at: e.at }) as const),
      );
      const journal = new ChargeJournal(lock, handle.handle, handle.size, options);
      for (const entry of live.values()) journal.track(entry);
      // Only now that their entries are durable in our file may the orphans' files go.
      for (const orphan of adopted) {
        await unlink(orphan.journalPath).catch(() => undefined);
        for (const turn of [0, 1]) await unlink(`${orphan.journalPath}.probe-${turn}`).catch(() => undefined);
        orphan.release();
      }
      return { journal, report };
    } catch (error) {
      for (const orphan of adopted) orphan.release();
      lock.release();
      throw error;
    }
  }

  get slot(): number {
    return this.lock.slot;
  }

  /** Live entries (charges not yet committed, and running streams' checkpoints). */
  get depth(): number {
    return this.entries.size;
  }

  /** Whether the last write, and the last probe, reached the disk. */
  get writable(): boolean {
    return this.lastWriteOk && this.probeOk;
  }

  get error(): unknown {
    return this.lastError;
  }

  /** Epoch ms of the oldest live entry, or null when empty. */
  oldestAt(): number | null {
    let oldest: number | null = null;
    for (const entry of this.entries.values()) if (oldest === null || entry.at < oldest) oldest = entry.at;
    return oldest;
  }

  /** Final charges not yet marked done (the settler applies them). */
  charges(): JournalEntry[] {
    return [...this.entries.values()].filter((e) => e.kind === 'charge');
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /**
   * Journals the charges; resolves once they are in the file — written to the kernel, so they
   * outlive this process (`kill -9` included) — and, unless `sync: false`, after the fdatasync of
   * their batch, so they outlive the machine too. Unsynced charges become durable with the next
   * sync of the file (`sync()`, or any synced write: each flushes everything written before it).
   */
  async appendCharges(settlements: readonly Settlement[], options: { sync?: boolean } = {}): Promise<void> {
    const at = this.options.now();
    const records = settlements.map((s) => ({ t: 'charge', s, at }) as const);
    const buffers = records.map(encodeRecord); // once: written, and sized for compaction
    await this.writeEncoded(buffers, options.sync ?? true);
    records.forEach((record, i) =>
      this.track({ id: record.s.generation.id, kind: 'charge', settlement: record.s, at, bytes: buffers[i]!.length }),
    );
  }

  /** A running stream's usage so far (superseded by the next checkpoint or its final charge). */
  async appendCheckpoint(settlement: Settlement): Promise<void> {
    const id = settlement.generation.id;
    const previous = this.entries.get(id);
    if (previous?.kind === 'charge') return; // the final charge is already here
    const record = { t: 'checkpoint', s: settlement, at: previous?.at ?? this.options.now() } as const;
    this.checkpointing.set(id, (this.checkpointing.get(id) ?? 0) + 1);
    let doneMeanwhile: boolean;
    try {
      await this.write([record], true);
    } finally {
      const left = this.checkpointing.get(id)! - 1;
      if (left > 0) this.checkpointing.set(id, left);
      else this.checkpointing.delete(id);
      doneMeanwhile = this.doneWhileCheckpointing.has(id);
      if (left === 0) this.doneWhileCheckpointing.delete(id);
    }
    if (doneMeanwhile) {
      // Its charge was committed (markDone) while this record was on its way: the record follows the
      // done marker in the file, so it gets one of its own, and it is not live (outside check: after a
      // full disk during a store outage, such entries stayed live until the next start).
      this.write([{ t: 'done', ids: [id] }], false).catch(() => undefined);
      return;
    }
    if (this.entries.get(id)?.kind !== 'charge') this.track(this.entryOf(record));
  }

  /** Makes everything written to the journal so far durable (one fdatasync, after the writes queued before it). */
  sync(): Promise<void> {
    return this.writeEncoded([EMPTY], true);
  }

  /**
   * The charges are committed (or given up): their entries go. The marker is written without its own
   * fsync — losing it in a crash only replays charges the store already has, which changes nothing.
   */
  markDone(ids: readonly string[]): void {
    for (const id of ids) if (this.checkpointing.has(id)) this.doneWhileCheckpointing.add(id);
    const known = this.forget(ids);
    if (known.length > 0) this.write([{ t: 'done', ids: known }], false).catch(() => undefined);
  }

  /**
   * A running answer's checkpoints without a charge to follow (it failed with nothing to charge): they
   * go, and the marker is synced, since a replay would otherwise charge them.
   */
  async withdraw(id: string): Promise<void> {
    if (this.entries.get(id)?.kind !== 'checkpoint') return;
    await this.write([{ t: 'done', ids: this.forget([id]) }], true);
  }

  /** Drops the live entries of these ids; the ids it had. */
  private forget(ids: readonly string[]): string[] {
    const known = ids.filter((id) => this.entries.has(id));
    for (const id of known) {
      this.liveBytes -= this.entries.get(id)!.bytes;
      this.entries.delete(id);
    }
    return known;
  }

  /**
   * Proves the disk still takes writes: a synced no-op record in the journal, and 16 KiB of freshly
   * allocated blocks in a side file (a tiny append can fit in a block the file already has, so it
   * would not notice a full disk).
   */
  async probe(): Promise<void> {
    await this.write([{ t: 'done', ids: [] }], true);
    // Two side files in turn: the new one is written while the old one still holds its blocks, so
    // the probe needs truly free space, then the old one goes.
    const next = `${this.lock.journalPath}.probe-${this.probeTurn}`;
    const previous = `${this.lock.journalPath}.probe-${1 - this.probeTurn}`;
    try {
      const handle = await open(next, 'w');
      try {
        await handle.write(PROBE_BLOCK, 0, PROBE_BLOCK.length, 0);
        await handle.datasync();
      } finally {
        await handle.close();
      }
      await unlink(previous).catch(() => undefined);
      this.probeTurn = 1 - this.probeTurn;
      this.probeOk = true;
    } catch (error) {
      this.probeOk = false;
      this.lastError = error;
      throw error;
    }
  }

  /** Waits for queued writes, then closes the file and releases the slot (its entries stay for the next start). */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.writing) await this.writing;
    this.closed = true;
    await this.handle.close().catch(() => undefined);
    this.lock.release();
  }

  private entryOf(record: Extract<JournalRecord, { t: 'charge' | 'checkpoint' }>): JournalEntry {
    return {
      id: record.s.generation.id,
      kind: record.t,
      settlement: record.s,
      at: record.at,
      bytes: encodeRecord(record).length,
    };
  }

  private track(entry: JournalEntry): void {
    const previous = this.entries.get(entry.id);
    if (previous) this.liveBytes -= previous.bytes;
    this.entries.set(entry.id, entry);
    this.liveBytes += entry.bytes;
  }

  private write(records: readonly JournalRecord[], durable: boolean): Promise<void> {
    try {
      return this.writeEncoded(records.map(encodeRecord), durable);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private writeEncoded(buffers: readonly Buffer[], durable: boolean): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the charge journal is closed'));
    const buffer = buffers.length === 1 ? buffers[0]! : Buffer.concat(buffers);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ buffer, durable, resolve, reject });
      this.writing ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        await this.writeBatch(batch);
        if (this.shouldCompact()) await this.compact();
      }
    } finally {
      this.writing = null;
    }
  }

  private async writeBatch(batch: Waiter[]): Promise<void> {
    const buffer = Buffer.concat(batch.map((w) => w.buffer));
    try {
      let written = 0;
      while (written < buffer.length) {
        const { bytesWritten } = await this.handle.write(buffer, written, buffer.length - written, this.size + written);
        written += bytesWritten;
      }
      if (batch.some((w) => w.durable)) {
        await this.handle.datasync();
        this.syncs += 1;
      }
      this.size += buffer.length;
      this.lastWriteOk = true;
      this.lastError = null;
      for (const w of batch) w.resolve();
    } catch (error) {
      // `size` is unchanged: the next batch overwrites whatever part of this one reached the file.
      this.lastWriteOk = false;
      this.lastError = error;
      await this.handle.truncate(this.size).catch(() => undefined);
      for (const w of batch) w.reject(error);
    }
  }

  private shouldCompact(): boolean {
    const min = this.options.compactMinBytes ?? DEFAULT_COMPACT_MIN_BYTES;
    return this.lastWriteOk && this.size > min && this.size > 4 * this.liveBytes;
  }

  /** Rewrites the live entries into a fresh file; on failure the old file stays in use (it is still correct). */
  private async compact(): Promise<void> {
    const records = [...this.entries.values()].map((e) => ({ t: e.kind, s: e.settlement, at: e.at }) as JournalRecord);
    try {
      const fresh = await writeFresh(this.lock.journalPath, records);
      await this.handle.close().catch(() => undefined);
      this.handle = fresh.handle;
      this.size = fresh.size;
    } catch {
      // Disk full or similar: keep appending to the current file.
    }
  }
}

/** The records of one journal file: the verified prefix; a torn or damaged tail is reported and ignored. */
async function readJournalFile(path: string, report: JournalOpenReport): Promise<JournalRecord[]> {
  let buffer: Buffer;
  try {
    buffer = await readFile(path);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return [];
    throw error;
  }
  const decoded = decodeRecords(buffer);
  if (decoded.tail !== null)
    report.damagedTails.push({ file: path, reason: decoded.tail, ignoredBytes: buffer.length - decoded.validBytes });
  return decoded.records;
}

/** Replays records in file order: a later record of an id supersedes an earlier one; `done` removes it. */
export function foldRecords(records: readonly JournalRecord[]): Map<string, JournalEntry> {
  const live = new Map<string, JournalEntry>();
  for (const record of records) {
    if (record.t === 'done') {
      for (const id of record.ids) live.delete(id);
      continue;
    }
    const id = record.s.generation.id;
    const previous = live.get(id);
    // A final charge is never superseded by a checkpoint (a late checkpoint write cannot undo it).
    if (previous?.kind === 'charge' && record.t === 'checkpoint') continue;
    live.set(id, {
      id,
      kind: record.t,
      settlement: record.s,
      at: previous?.at ?? record.at,
      bytes: encodeRecord(record).length,
    });
  }
  return live;
}

/** Writes `records` to `<path>.tmp`, syncs it, renames it over `path`, syncs the directory; returns an append handle. */
async function writeFresh(
  path: string,
  records: readonly JournalRecord[],
): Promise<{ handle: FileHandle; size: number }> {
  const temp = `${path}.tmp`;
  const buffer = Buffer.concat(records.map(encodeRecord));
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(buffer);
    await handle.datasync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await rename(temp, path);
  fsyncDirectory(dirname(path));
  // 'r+': positional writes at the end we track (never O_APPEND, which would ignore the position).
  return { handle: await open(path, 'r+'), size: buffer.length };
}

export { slotJournalPath };
