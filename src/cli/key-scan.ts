/**
 * `tollgate keys scan [PATH…]`: finds Tollgate keys in files, folders (recursively) or standard input,
 * offline. The checksum drops look-alikes, so a hit is almost surely a real key. Prints `file:line:
 * <masked key>` (never the key) and exits 1 when something was found, 2 when a path could not be read
 * (a missing file is no clean pass) — a pre-commit hook:
 *   git diff --cached --name-only -z --diff-filter=ACM | xargs -0 -r npx tollgate keys scan
 */
import { createReadStream } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { maskKey } from '../auth/key-format.js';
import { findKeys } from '../auth/key-search.js';

/** Folders no one commits keys into on purpose, and that are huge. */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);
/** Files are read in chunks of this size, so a file of any size is scanned in bounded memory. */
const CHUNK_BYTES = 1024 * 1024;
/** What a chunk keeps of the one before: more than a key, so a key split between two is found. */
const OVERLAP = 128;

export interface ScanHit {
  file: string;
  line: number;
  label: string;
}

/** Hits in one text, with 1-based line numbers. */
export function scanText(file: string, text: string): ScanHit[] {
  const hits: ScanHit[] = [];
  const scan = new ChunkedScan(file, hits);
  scan.push(text);
  scan.end();
  return hits;
}

/**
 * Keys in a text that arrives in pieces. Each piece is searched with the tail of the one before; a
 * key is taken once (by where it starts), and only when it cannot grow further — it ends before the
 * tail the next piece will search again, or the text has ended — since a key followed by more hex is
 * no key.
 */
class ChunkedScan {
  private carry = '';
  /** Offset of `carry` in the whole text, and the line it starts on. */
  private carryAt = 0;
  private carryLine = 1;
  private takenUpTo = -1;

  constructor(
    private readonly file: string,
    private readonly hits: ScanHit[],
  ) {}

  push(piece: string): void {
    this.search(this.carry + piece, false);
  }

  end(): void {
    this.search(this.carry, true);
  }

  private search(text: string, last: boolean): void {
    const settled = last ? text.length : Math.max(0, text.length - OVERLAP);
    /** Where the next piece's search starts: the settled part, or the start of a key that may grow. */
    let cut = settled;
    let line = this.carryLine;
    let counted = 0; // `line` is the line of offset `counted`
    for (const found of findKeys(text)) {
      if (this.carryAt + found.index <= this.takenUpTo) continue;
      if (found.index + found.key.length > settled) {
        cut = Math.min(cut, found.index); // may grow: the next piece decides
        break;
      }
      line += countNewlines(text, counted, found.index);
      counted = found.index;
      this.takenUpTo = this.carryAt + found.index;
      this.hits.push({ file: this.file, line, label: maskKey(found.key) });
    }
    this.carryLine = line + countNewlines(text, counted, cut);
    this.carry = text.slice(cut);
    this.carryAt += cut;
  }
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * Scans `path` (a file or a folder); returns false when some of it could not be read. A path named on
 * the command line is followed when it is a symbolic link (a deploy folder `current -> releases/…`;
 * a dangling link is a missing file); inside a folder, links are said and not followed (a loop, or a
 * tree outside the one asked for).
 */
async function scanPath(
  path: string,
  hits: ScanHit[],
  warn: (message: string) => void,
  named = false,
): Promise<boolean> {
  try {
    const info = named ? await stat(path) : await lstat(path);
    if (info.isSymbolicLink()) {
      warn(`${path}: symbolic link, not followed`);
      return true;
    }
    if (info.isDirectory()) {
      const entries = await readdir(path, { withFileTypes: true });
      entries.sort((a, b) => a.name.localeCompare(b.name));
      let whole = true;
      for (const entry of entries) {
        if (entry.isDirectory() && SKIPPED_DIRECTORIES.has(entry.name)) continue;
        whole = (await scanPath(join(path, entry.name), hits, warn)) && whole;
      }
      return whole;
    }
    if (!info.isFile()) return true;
    const scan = new ChunkedScan(path, hits);
    for await (const chunk of createReadStream(path, { highWaterMark: CHUNK_BYTES }))
      scan.push((chunk as Buffer).toString('latin1'));
    scan.end();
    return true;
  } catch (error) {
    warn(`${path}: not scanned (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    return false;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('latin1');
}

/** Returns the exit code: 1 when a key was found, else 2 when a path could not be read, else 0. */
export async function runKeyScan(
  paths: readonly string[],
  out: (line: string) => void,
  warn: (line: string) => void,
): Promise<number> {
  const hits: ScanHit[] = [];
  let whole = true;
  if (paths.length === 0 || (paths.length === 1 && paths[0] === '-'))
    hits.push(...scanText('(stdin)', await readStdin()));
  else for (const path of paths) whole = (await scanPath(path, hits, warn, true)) && whole;
  for (const hit of hits) out(`${hit.file}:${hit.line}: ${hit.label}`);
  if (hits.length > 0)
    warn(
      `found ${hits.length} Tollgate key${hits.length === 1 ? '' : 's'}: delete ${hits.length === 1 ? 'it' : 'them'} from the files and replace the exposed keys (tollgate keys delete HASH, then create new ones)`,
    );
  // A path that could not be read is not a clean pass: a pre-commit hook must not let it through.
  return hits.length > 0 ? 1 : whole ? 0 : 2;
}
