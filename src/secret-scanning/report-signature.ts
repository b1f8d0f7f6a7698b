/**
 * Secret-scanning reports are signed over the raw body bytes with ECDSA P-256 / SHA-256; the
 * signature is DER, base64-encoded, in `Github-Public-Key-Signature`. Verified before the body is
 * parsed, so an unsigned request changes nothing and costs no lookup.
 */
import { verify, type KeyObject } from 'node:crypto';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function isValidReportSignature(body: Buffer, signatureBase64: string, key: KeyObject): boolean {
  const trimmed = signatureBase64.trim();
  // A DER ECDSA P-256 signature is at most 72 bytes; anything far longer is not one.
  if (trimmed.length === 0 || trimmed.length > 200 || !BASE64.test(trimmed)) return false;
  try {
    return verify('sha256', body, { key, dsaEncoding: 'der' }, Buffer.from(trimmed, 'base64'));
  } catch {
    return false;
  }
}
