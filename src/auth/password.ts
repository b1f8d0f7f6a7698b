/**
 * Account passwords: scrypt (memory-hard) from node:crypto, run on the thread pool so a sign-in never
 * blocks the event loop. A stored hash describes itself — `scrypt$N=32768,r=8,p=1$<salt>$<hash>`
 * (base64url) — so the parameters can be raised later without breaking existing hashes.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 256;

/** N=2^15, r=8, p=1: 32 MiB of memory and tens of milliseconds per hash — costly to guess in bulk, cheap for one sign-in. */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;

function derive(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
  length: number,
): Promise<Buffer> {
  // 128·N·r bytes are needed; Node's default cap (32 MiB) is exactly N=2^15·r=8, so leave headroom.
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r + 1024 * 1024,
  };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, length, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, PARAMS, HASH_BYTES);
  return `scrypt$N=${PARAMS.N},r=${PARAMS.r},p=${PARAMS.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

interface ParsedHash {
  params: { N: number; r: number; p: number };
  salt: Buffer;
  hash: Buffer;
}

function parseHash(stored: string): ParsedHash | null {
  const parts = stored.split('$');
  if (parts[0] !== 'scrypt') return null;
  if (parts.length === 3) {
    // The first format (before sign-in existed): hex salt and hash, Node's default parameters.
    return {
      params: { N: 16384, r: 8, p: 1 },
      salt: Buffer.from(parts[1]!, 'hex'),
      hash: Buffer.from(parts[2]!, 'hex'),
    };
  }
  if (parts.length !== 4) return null;
  const match = /^N=(\d+),r=(\d+),p=(\d+)$/.exec(parts[1]!);
  if (!match) return null;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Bounds: a corrupted row must not make us allocate gigabytes.
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  const hash = Buffer.from(parts[3]!, 'base64url');
  if (hash.length < 16) return null;
  return { params: { N, r, p }, salt: Buffer.from(parts[2]!, 'base64url'), hash };
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  const candidate = await derive(password, parsed.salt, parsed.params, parsed.hash.length);
  return timingSafeEqual(candidate, parsed.hash);
}

/** True when a stored hash uses weaker parameters than today's (re-hash it after a successful sign-in). */
export function needsRehash(stored: string): boolean {
  const parsed = parseHash(stored);
  return !parsed || parsed.params.N < PARAMS.N || parsed.params.r < PARAMS.r || parsed.salt.length < SALT_BYTES;
}

let dummy: Promise<string> | null = null;

/**
 * Spends the same time as checking a real password, for e-mails that have no account (or no
 * password): the answer time must not reveal which e-mails exist.
 */
export async function burnPasswordCheck(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password, await dummy);
  return false;
}

/** A password for the demo account: 24 characters of base64url (144 bits). */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
