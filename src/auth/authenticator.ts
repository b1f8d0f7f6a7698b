/**
 * Bearer key authentication. Malformed keys are rejected offline (prefix + checksum); well-formed ones
 * are hashed and looked up through a cache (no database round trip per request), which the change bus
 * invalidates whenever a key changes.
 */
import { TollgateError, isStoreOutage } from '../core/errors.js';
import { ALL_IDS, type ChangeBus } from '../core/change-bus.js';
import { TtlCache } from '../core/ttl-cache.js';
import type { KeyRecord, Store } from '../store/types.js';
import { hashKey, isWellFormedKey } from './key-format.js';

export type KeyKind = 'inference' | 'management' | 'any';

export interface AuthenticatorOptions {
  store: Store;
  bus: ChangeBus;
  now: () => number;
  ttlMs: number;
  maxEntries?: number;
  /**
   * How long past its expiry a cached key still authenticates while the store is unreachable (the
   * grace duration, main.ts): a store outage must not end grace at the key cache's TTL. 0: never.
   */
  staleOnOutageMs?: number;
}

export class Authenticator {
  private readonly cache: TtlCache<KeyRecord | null>;
  private readonly store: Store;
  private readonly now: () => number;

  constructor(options: AuthenticatorOptions) {
    this.store = options.store;
    this.now = options.now;
    this.cache = new TtlCache(options.ttlMs, options.maxEntries ?? 100_000, options.now, {
      ms: options.staleOnOutageMs ?? 0,
      when: isStoreOutage,
    });
    options.bus.subscribe((topic, id) => {
      if (topic === 'key') {
        if (id === ALL_IDS) this.cache.clear();
        else this.cache.invalidate(id);
      }
    });
  }

  async authenticate(authorization: string | undefined, kind: KeyKind): Promise<KeyRecord> {
    if (!authorization) throw new TollgateError('auth.missing_key', 'No auth credentials found');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new TollgateError('auth.invalid_key', 'Authorization header must be "Bearer <key>"');
    const token = match[1]!;
    if (!isWellFormedKey(token)) throw new TollgateError('auth.invalid_key', 'Invalid API key');

    const hash = hashKey(token);
    const key = await this.cache.get(hash, () => this.store.getKey(hash));
    // Constant-time comparison is unnecessary here: the lookup is by SHA-256 hash, so response timing
    // depends on the hash, which an attacker cannot steer towards a real key.
    if (!key) throw new TollgateError('auth.invalid_key', 'Invalid API key');
    // A key reported compromised stays dead even if someone flips `disabled` back.
    if (key.compromisedAt !== null)
      throw new TollgateError('auth.invalid_key', 'API key was disabled because it was exposed; create a new key');
    if (key.disabled) throw new TollgateError('auth.invalid_key', 'API key is disabled');
    if (key.expiresAt !== null && key.expiresAt <= this.now())
      throw new TollgateError('auth.invalid_key', 'API key has expired');
    if (kind === 'inference' && key.isManagement) {
      throw new TollgateError(
        'auth.wrong_key_kind',
        'Management keys cannot be used for inference; use an inference key',
      );
    }
    if (kind === 'management' && !key.isManagement) {
      throw new TollgateError('auth.wrong_key_kind', 'This route requires a management key');
    }
    return key;
  }
}
