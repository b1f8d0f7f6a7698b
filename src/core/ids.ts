import { randomBytes, randomUUID } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomBase62(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const byte = bytes[i]!;
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  while (out.length < length) out += ALPHABET[randomBytes(1)[0]! % 62];
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
