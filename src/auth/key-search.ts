/**
 * Finding Tollgate keys inside arbitrary text (prompts, files): the fixed prefix first (a plain
 * substring search, so text without it costs one scan), then the exact shape, then the CRC-32
 * checksum, which drops look-alikes offline. Shared by the chat request step and `tollgate keys scan`.
 */
import { isWellFormedKey, KEY_PREFIX } from './key-format.js';

/** The pattern to register with a code host's push protection (custom secret pattern). */
export const KEY_SEARCH_SOURCE = 'sk-tg-v1-[0-9a-f]{64}';
// Not followed by more hex: a longer hex run is not a key.
const KEY_SEARCH = new RegExp(`${KEY_SEARCH_SOURCE}(?![0-9a-f])`, 'g');

export interface FoundKey {
  key: string;
  /** Offset in the text. */
  index: number;
}

/** Every well-formed key (checksum verified) in `text`, in order. */
export function findKeys(text: string): FoundKey[] {
  if (!text.includes(KEY_PREFIX)) return [];
  const found: FoundKey[] = [];
  for (const match of text.matchAll(KEY_SEARCH)) {
    if (isWellFormedKey(match[0])) found.push({ key: match[0], index: match.index });
  }
  return found;
}

/** `text` with every well-formed key replaced by `replace(key)`; the same string when there is none. */
export function replaceKeys(text: string, replace: (key: string) => string): string {
  if (!text.includes(KEY_PREFIX)) return text;
  return text.replace(KEY_SEARCH, (candidate) => (isWellFormedKey(candidate) ? replace(candidate) : candidate));
}
