/**
 * The charge journal's on-disk record format. Each record is framed as
 *   [u32 LE payload length][u32 LE CRC-32 of the payload][payload: UTF-8 JSON]
 * so a record cut by a crash (short length, short payload) or damaged on disk (checksum) is
 * recognised and everything from it on is ignored: only whole, verified records are ever replayed.
 * Money fields are bigint; JSON carries them as `{"$big":"<digits>"}`.
 */
import { crc32 } from 'node:zlib';
import type { Settlement } from '../store/types.js';

export type JournalRecord =
  /** A final charge: applied to the store, then marked done. */
  | { t: 'charge'; s: Settlement; at: number }
  /** A running stream's usage so far: superseded by a later checkpoint or the final charge of the same id. */
  | { t: 'checkpoint'; s: Settlement; at: number }
  /** The charges with these generation ids are committed in the store (or given up): their entries are removed. */
  | { t: 'done'; ids: string[] };

const HEADER_BYTES = 8;
/** A record larger than this is corruption, not a charge (a generation record is a few KiB at most). */
export const MAX_RECORD_BYTES = 1024 * 1024;

function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $big: value.toString() } : value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const big = (value as { $big?: unknown }).$big;
    if (typeof big === 'string' && Object.keys(value).length === 1 && /^-?\d+$/.test(big)) return BigInt(big);
  }
  return value;
}

const big = (value: bigint) => ({ $big: value.toString() });

/**
 * The record's JSON. A charge's money fields are converted up front, so the common record needs no
 * replacer (a call per value, most of the cost of encoding); a bigint anywhere else makes the plain
 * stringify throw, and the record is encoded with the replacer instead. Same text either way.
 */
export function jsonOf(record: JournalRecord): string {
  if (record.t === 'done') return JSON.stringify(record);
  const generation = record.s.generation;
  try {
    return JSON.stringify({
      ...record,
      s: {
        ...record.s,
        generation: {
          ...generation,
          totalCost: big(generation.totalCost),
          upstreamPromptCost: big(generation.upstreamPromptCost),
          upstreamCompletionCost: big(generation.upstreamCompletionCost),
          ...(generation.byokListCost === undefined ? {} : { byokListCost: big(generation.byokListCost) }),
        },
      },
    });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return JSON.stringify(record, replacer);
  }
}

export function encodeRecord(record: JournalRecord): Buffer {
  const payload = Buffer.from(jsonOf(record), 'utf8');
  if (payload.length > MAX_RECORD_BYTES)
    throw new RangeError(`journal record of ${payload.length} bytes exceeds ${MAX_RECORD_BYTES}`);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(payload.length, 0);
  header.writeUInt32LE(crc32(payload) >>> 0, 4);
  return Buffer.concat([header, payload]);
}

export interface DecodedJournal {
  records: JournalRecord[];
  /** Bytes of whole, verified records from the start; anything after is a torn or damaged tail. */
  validBytes: number;
  /** Why decoding stopped before the end of the buffer (null: it did not). */
  tail: 'truncated' | 'checksum' | 'invalid' | null;
}

function isRecord(value: unknown): value is JournalRecord {
  if (value === null || typeof value !== 'object') return false;
  const r = value as { t?: unknown; s?: { generation?: { id?: unknown } }; ids?: unknown; at?: unknown };
  if (r.t === 'done') return Array.isArray(r.ids) && r.ids.every((id) => typeof id === 'string');
  return (
    (r.t === 'charge' || r.t === 'checkpoint') && typeof r.at === 'number' && typeof r.s?.generation?.id === 'string'
  );
}

/** Decodes every whole record; stops at the first torn or damaged one. */
export function decodeRecords(buffer: Buffer): DecodedJournal {
  const records: JournalRecord[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    if (buffer.length - offset < HEADER_BYTES) return { records, validBytes: offset, tail: 'truncated' };
    const length = buffer.readUInt32LE(offset);
    const checksum = buffer.readUInt32LE(offset + 4);
    if (length > MAX_RECORD_BYTES) return { records, validBytes: offset, tail: 'invalid' };
    const end = offset + HEADER_BYTES + length;
    if (end > buffer.length) return { records, validBytes: offset, tail: 'truncated' };
    const payload = buffer.subarray(offset + HEADER_BYTES, end);
    if (crc32(payload) >>> 0 !== checksum) return { records, validBytes: offset, tail: 'checksum' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'), reviver);
    } catch {
      return { records, validBytes: offset, tail: 'invalid' };
    }
    if (!isRecord(parsed)) return { records, validBytes: offset, tail: 'invalid' };
    records.push(parsed);
    offset = end;
  }
  return { records, validBytes: offset, tail: null };
}
