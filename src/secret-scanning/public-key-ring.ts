/**
 * The code host's public keys, by identifier: the ones in the config file, plus (optionally) the ones
 * served at `secret_scanning.keys_url` as `{ public_keys: [{ key_identifier, key, is_current }] }`.
 * Fetched keys are cached for `keys_refresh_ms`; an unknown identifier triggers a refetch at most once
 * a minute (the host rotates keys; a flood of bogus identifiers must not turn into a flood of fetches).
 * The fetch is bounded in time and size.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import { p256KeyProblem, type SecretScanningConfig } from '../config/mail-schema.js';
import type { Logger } from '../observability/logger.js';

const REFETCH_MIN_MS = 60_000;
const FETCH_TIMEOUT_MS = 5_000;
const FETCH_MAX_BYTES = 256 * 1024;

export type KeyFetcher = (url: string) => Promise<unknown>;

/** GET `url` as JSON through undici, within FETCH_TIMEOUT_MS and FETCH_MAX_BYTES. */
export async function fetchJsonBounded(url: string): Promise<unknown> {
  const response = await request(url, {
    method: 'GET',
    headersTimeout: FETCH_TIMEOUT_MS,
    bodyTimeout: FETCH_TIMEOUT_MS,
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new Error(`keys_url answered HTTP ${response.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length;
    if (size > FETCH_MAX_BYTES) {
      response.body.destroy();
      throw new Error(`keys_url answered more than ${FETCH_MAX_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

function parseServedKeys(body: unknown): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const list = (body as { public_keys?: unknown } | null)?.public_keys;
  if (!Array.isArray(list)) throw new Error('keys_url did not answer { public_keys: [...] }');
  for (const entry of list as Array<{ key_identifier?: unknown; key?: unknown }>) {
    if (
      typeof entry?.key_identifier !== 'string' ||
      typeof entry.key !== 'string' ||
      p256KeyProblem(entry.key) !== null
    )
      continue;
    keys.set(entry.key_identifier, createPublicKey(entry.key));
  }
  return keys;
}

export class PublicKeyRing {
  private readonly configured = new Map<string, KeyObject>();
  private fetched = new Map<string, KeyObject>();
  private fetchedAt = -Infinity;
  private lastAttemptAt = -Infinity;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly config: Pick<SecretScanningConfig, 'public_keys' | 'keys_url' | 'keys_refresh_ms'>,
    private readonly now: () => number,
    private readonly log: Logger,
    private readonly fetcher: KeyFetcher = fetchJsonBounded,
  ) {
    for (const { key_identifier, key } of config.public_keys) this.configured.set(key_identifier, createPublicKey(key));
  }

  async find(identifier: string): Promise<KeyObject | null> {
    const known = this.configured.get(identifier);
    if (known) return known;
    if (this.config.keys_url === null) return null;
    const now = this.now();
    const stale = now - this.fetchedAt >= this.config.keys_refresh_ms;
    const unknown = !this.fetched.has(identifier);
    const mayFetch = now - this.lastAttemptAt >= REFETCH_MIN_MS;
    if ((stale || unknown) && mayFetch) await this.refresh(this.config.keys_url);
    return this.fetched.get(identifier) ?? null;
  }

  private refresh(url: string): Promise<void> {
    this.inFlight ??= (async () => {
      this.lastAttemptAt = this.now();
      try {
        this.fetched = parseServedKeys(await this.fetcher(url));
        this.fetchedAt = this.now();
      } catch (error) {
        // Keep the keys we had: a blip at the host must not reject every report.
        this.log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'could not refresh the secret-scanning public keys',
        );
      }
    })().finally(() => (this.inFlight = null));
    return this.inFlight;
  }
}
