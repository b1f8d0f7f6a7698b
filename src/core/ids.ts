import { randomFillSync, randomUUID } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Bytes from the CSPRNG, drawn 4 KiB at a time (one native call per ~200 generation ids instead of
 * one per id, as `randomUUID` does); each byte is handed out once.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62]; // 248 = 4 × 62: no modulo bias
  }
  return out;
}

/** OpenRouter-style generation id: `gen-<unix seconds>-<20 base62>`. */
export function newGenerationId(nowMs: number): string {
  return `gen-${Math.floor(nowMs / 1000)}-${randomBase62(20)}`;
}

export function newAccountId(): string {
  return `acct_${randomUUID().replaceAll('-', '')}`;
}

export function newEntryId(): string {
  return randomUUID();
}
