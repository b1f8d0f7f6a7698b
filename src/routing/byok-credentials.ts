/**
 * The account's usable BYOK keys, decrypted, cached per account (no store round trip per request)
 * and forgotten when the change bus says the account's BYOK entries changed.
 */
import type { SecretBox } from '../auth/secret-box.js';
import { ALL_IDS, type ChangeBus } from '../core/change-bus.js';
import { isStoreOutage } from '../core/errors.js';
import { TtlCache } from '../core/ttl-cache.js';
import type { Logger } from '../observability/logger.js';
import type { ByokRecord, Store } from '../store/types.js';

export interface ByokCredential {
  id: string;
  provider: string;
  apiKey: string;
  isFallback: boolean;
  isRequired: boolean;
  sortOrder: number;
  allowedModels: ReadonlySet<string> | null;
  allowedKeyHashes: ReadonlySet<string> | null;
}

export class ByokCredentials {
  private readonly cache: TtlCache<ByokCredential[]>;

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox | null,
    bus: ChangeBus,
    now: () => number,
    private readonly log: Logger,
    options: { ttlMs?: number; staleOnOutageMs?: number } = {},
  ) {
    // As for keys (auth/authenticator.ts): an account's list still answers while the store is out.
    this.cache = new TtlCache(options.ttlMs ?? 60_000, 50_000, now, {
      ms: options.staleOnOutageMs ?? 0,
      when: isStoreOutage,
    });
    bus.subscribe((topic, id) => {
      if (topic === 'byok') {
        if (id === ALL_IDS) this.cache.clear();
        else this.cache.invalidate(id);
      }
    });
  }

  /** The credentials this key may use, best first (sort_order, then age). */
  async forKey(accountId: string, keyHash: string): Promise<ByokCredential[]> {
    if (!this.box) return [];
    const all = await this.cache.get(accountId, async () =>
      (await this.store.byok.list(accountId)).flatMap((r) => this.open(r)),
    );
    return all.filter((c) => !c.allowedKeyHashes || c.allowedKeyHashes.has(keyHash));
  }

  private open(record: ByokRecord): ByokCredential[] {
    if (record.disabled || !this.box) return [];
    try {
      return [
        {
          id: record.id,
          provider: record.provider,
          apiKey: this.box.decrypt(record.ciphertext, record.id),
          isFallback: record.isFallback,
          isRequired: record.isRequired,
          sortOrder: record.sortOrder,
          allowedModels: record.allowedModels ? new Set(record.allowedModels) : null,
          allowedKeyHashes: record.allowedKeyHashes ? new Set(record.allowedKeyHashes) : null,
        },
      ];
    } catch (error) {
      // A key that no configured master key opens is unusable, not fatal: shared capacity still serves.
      this.log.error(
        { byok_id: record.id, account: record.accountId, reason: (error as Error).message },
        'cannot decrypt a BYOK key; skipping it',
      );
      return [];
    }
  }
}
