/**
 * App attribution: which app a request came from, for the account's usage breakdown and the public
 * rankings. The identity is the normalised origin of the referer; the name comes from the title
 * header. Everything here is caller-controlled text that ends up on a public page, so anything odd
 * is dropped rather than repaired.
 */
import { createHash } from 'node:crypto';
import { withoutInvisible } from '../core/display-text.js';

export interface AppIdentity {
  /** Stable numeric id (the SDK's `app_id` is an integer): 52 bits of SHA-256 of `key`, a safe integer on every store. */
  id: number;
  /** What makes two requests the same app: the origin, plus the title for loopback origins. */
  key: string;
  origin: string;
  /** The title when one was sent, else the origin's host. */
  name: string;
  titled: boolean;
}

/** Over this, a referer is junk, not a URL someone meant. */
export const MAX_REFERER_LENGTH = 2048;
/** Titles are cut to this many characters (code points). */
export const MAX_TITLE_LENGTH = 80;

// C0/C1 controls and DEL: a title holding them is junk. Bidi overrides and zero-width marks are
// removed: they let a name render as something else.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/**
 * Node hands header values over as latin1; a value sent as UTF-8 is decoded back when it is valid
 * UTF-8. Applied where the headers are read (http/request-context.ts), and again to titles read back
 * (rows stored before that kept the latin1 form). Decoding decoded text leaves it as it is, unless its
 * characters, read as latin1 bytes, happen to be valid UTF-8 themselves (mojibake typed on purpose).
 */
export function decodeHeader(value: string): string {
  if (!/[\u0080-\u00ff]/.test(value) || /[^ -\u00ff]/.test(value)) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

export function normaliseTitle(raw: string | null | undefined): string | null {
  if (typeof raw !== 'string') return null;
  const text = decodeHeader(raw);
  if (CONTROL.test(text)) return null;
  const cleaned = withoutInvisible(text).replace(/\s+/gu, ' ').trim();
  if (cleaned.length === 0) return null;
  const codePoints = [...cleaned];
  return codePoints.length <= MAX_TITLE_LENGTH ? cleaned : codePoints.slice(0, MAX_TITLE_LENGTH).join('').trimEnd();
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    /^127(\.\d{1,3}){3}$/.test(host) ||
    host === '[::1]' ||
    host === '0.0.0.0' ||
    host === '[::]'
  );
}

function validHostname(hostname: string): boolean {
  if (hostname.length === 0 || hostname.length > 253) return false;
  if (hostname.startsWith('[')) return true; // IPv6 literal, already validated by the URL parser
  return hostname.split('.').every((label) => label.length > 0 && label.length <= 63);
}

export interface NormalisedReferer {
  origin: string;
  loopback: boolean;
}

/** The referer's origin (`https://app.example.com`, port kept when not the default), or null for junk. */
export function normaliseReferer(raw: string | null | undefined): NormalisedReferer | null {
  if (typeof raw !== 'string') return null;
  const text = raw.trim();
  if (text.length === 0 || text.length > MAX_REFERER_LENGTH || CONTROL.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (!validHostname(url.hostname)) return null;
  return { origin: url.origin, loopback: isLoopbackHost(url.hostname) };
}

function idOf(key: string): number {
  const digest = createHash('sha256').update(key).digest();
  // 52 bits: below 2^53, so exact as a JS number and as a JSON integer.
  return Number(digest.readBigUInt64BE(0) >> 12n);
}

/**
 * The app a request is attributed to, or null. A loopback referer (a developer's machine) names an
 * app only together with a title, and then the title is part of the identity: every local app shares
 * `http://localhost:3000`.
 */
export function appIdentity(referer: string | null | undefined, title: string | null | undefined): AppIdentity | null {
  const origin = normaliseReferer(referer);
  if (!origin) return null;
  const name = normaliseTitle(title);
  if (origin.loopback && name === null) return null;
  const key = origin.loopback ? `${origin.origin}#${name!}` : origin.origin;
  return {
    id: idOf(key),
    key,
    origin: origin.origin,
    name: name ?? new URL(origin.origin).host,
    titled: name !== null,
  };
}
