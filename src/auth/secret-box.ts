/**
 * Encryption at rest for provider keys (BYOK): AES-256-GCM with a master key from the environment.
 * Ciphertext format: `v1.<key id>.<iv>.<tag>.<data>` (base64url), where the key id is the first 8 hex
 * of the master key's SHA-256 — so after a rotation, entries written under a previous key still
 * decrypt (with that key from TOLLGATE_MASTER_KEY_PREVIOUS) until they are re-encrypted.
 * The record id is bound as additional authenticated data: a ciphertext copied to another row fails.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** GCM's standard sizes; anything else in a stored ciphertext is corruption or forgery. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface MasterKey {
  id: string;
  key: Buffer;
}

/** 32 bytes as 64 hex characters or base64 (44 characters). */
export function parseMasterKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new RangeError('a master key must be 32 bytes, given as 64 hex characters or base64');
  return key;
}

function masterKey(key: Buffer): MasterKey {
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 8), key };
}

export class SecretBox {
  private readonly current: MasterKey;
  private readonly byId = new Map<string, MasterKey>();

  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    this.current = masterKey(current);
    for (const key of [current, ...previous]) {
      const entry = masterKey(key);
      this.byId.set(entry.id, entry);
    }
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  encrypt(plaintext: string, boundTo: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(boundTo));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      'v1',
      this.current.id,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      data.toString('base64url'),
    ].join('.');
  }

  decrypt(ciphertext: string, boundTo: string): string {
    const [version, keyId, iv, tag, data] = ciphertext.split('.');
    if (version !== 'v1' || !keyId || !iv || !tag || data === undefined) throw new Error('unrecognised ciphertext');
    const master = this.byId.get(keyId);
    if (!master) throw new Error(`ciphertext was written under master key ${keyId}, which is not configured`);
    const ivBytes = Buffer.from(iv, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    // Node accepts GCM tags down to 4 bytes unless told the length: a truncated tag would make forgery
    // 2^96 times easier. Both lengths are fixed by how we encrypt.
    if (ivBytes.length !== IV_BYTES) throw new Error(`ciphertext IV must be ${IV_BYTES} bytes`);
    if (tagBytes.length !== TAG_BYTES) throw new Error(`ciphertext tag must be ${TAG_BYTES} bytes`);
    const decipher = createDecipheriv('aes-256-gcm', master.key, ivBytes, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(tagBytes);
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** True when the ciphertext is under an older master key and should be re-encrypted. */
  isStale(ciphertext: string): boolean {
    return ciphertext.split('.')[1] !== this.current.id;
  }
}
