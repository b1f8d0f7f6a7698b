/**
 * `tollgate keys scan [PATH…]`: finds Tollgate keys in files, folders (recursively) or standard input,
 * offline. The checksum drops look-alikes, so a hit is almost surely a real key. Prints `file:line:
 * <masked key>` (never the key) and exits 1 when something was found — a pre-commit hook:
 *   git diff --cached --name-only -z --diff-filter=ACM | xargs -0 -r npx tollgate keys scan
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { maskKey } from '../auth/key-format.js';
import { findKeys } from '../auth/key-search.js';

/** Folders no one commits keys into on purpose, and that are huge. */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);
const MAX_FILE_BYTES = 16 * 1024 * 1024;

export interface ScanHit {
  file: string;
  line: number;
  label: string;
}

/** Hits in one text, with 1-based line numbers. */
export function scanText(file: string, text: string): ScanHit[] {
  const hits: ScanHit[] = [];
  let line = 1;
  let lineStart = 0;
  for (const found of findKeys(text)) {
    for (let i = text.indexOf('\n', lineStart); i !== -1 && i < found.index; i = text.indexOf('\n', i + 1)) {
      line += 1;
      lineStart = i + 1;
    }
    hits.push({ file, line, label: maskKey(found.key) });
  }
  return hits;
}

async function scanPath(path: string, hits: ScanHit[], warn: (message: string) => void): Promise<void> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    warn(`${path}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    return;
  }
  if (info.isSymbolicLink()) return;
  if (info.isDirectory()) {
    const entries = await readdir(path, { withFileTypes: true });
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.isDirectory() && SKIPPED_DIRECTORIES.has(entry.name)) continue;
      await scanPath(join(path, entry.name), hits, warn);
    }
    return;
  }
  if (!info.isFile() || info.size > MAX_FILE_BYTES) return;
  const text = (await readFile(path)).toString('latin1');
  hits.push(...scanText(path, text));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('latin1');
}

/** Returns the exit code: 1 when a key was found, else 0. */
export async function runKeyScan(
  paths: readonly string[],
  out: (line: string) => void,
  warn: (line: string) => void,
): Promise<number> {
  const hits: ScanHit[] = [];
  if (paths.length === 0 || (paths.length === 1 && paths[0] === '-'))
    hits.push(...scanText('(stdin)', await readStdin()));
  else for (const path of paths) await scanPath(path, hits, warn);
  for (const hit of hits) out(`${hit.file}:${hit.line}: ${hit.label}`);
  if (hits.length > 0)
    warn(
      `found ${hits.length} Tollgate key${hits.length === 1 ? '' : 's'}: delete ${hits.length === 1 ? 'it' : 'them'} from the files and replace the exposed keys (tollgate keys delete HASH, then create new ones)`,
    );
  return hits.length > 0 ? 1 : 0;
}
