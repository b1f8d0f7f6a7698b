/**
 * Key format (docs/api.md): `sk-tg-v1-` + 64 lowercase hex; the last 8 hex are the CRC-32 of the first
 * 56, so typos and random strings are rejected offline, before any lookup. Only the SHA-256 hash of
 * the whole key string is stored; the plaintext exists once, in the creation response.
 */
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const KEY_PREFIX = 'sk-tg-v1-';
const KEY_PATTERN = /^sk-tg-v1-[0-9a-f]{64}$/;
/**
 * A Tollgate key's prefix and what follows it in hex (whole or cut short, but not a masked label's
 * three hex: `sk-tg-v1-255...de4` names a key without giving it away), anywhere in a text.
 */
const KEY_SHAPED = /sk-tg-v1-[0-9a-f]{12,}/gi;

/** `text` with anything shaped like a Tollgate key replaced by `[redacted]` (logs, echoed input). */
export function redactKeys(text: string): string {
  return text.replace(KEY_SHAPED, '[redacted]');
}

function checksum(body: string): string {
  return (crc32(body) >>> 0).toString(16).padStart(8, '0');
}

export function generateKey(): string {
  const body = randomBytes(28).toString('hex');
  return `${KEY_PREFIX}${body}${checksum(body)}`;
}

/** Shape and checksum only; says nothing about whether the key exists. */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const hex = key.slice(KEY_PREFIX.length);
  return checksum(hex.slice(0, 56)) === hex.slice(56);
}

export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function maskKey(key: string): string {
  const hex = key.slice(KEY_PREFIX.length);
  return `${KEY_PREFIX}${hex.slice(0, 3)}...${hex.slice(-3)}`;
}

/** A short, non-reversible identifier for logs: the first 12 hex of the hash. */
export function keyLogId(hash: string): string {
  return hash.slice(0, 12);
}
