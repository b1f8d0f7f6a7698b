import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isValidReportSignature } from './report-signature.js';

describe('secret-scanning report signatures (ECDSA P-256 / SHA-256, DER, base64)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const body = Buffer.from('[{"token":"x","type":"t"}]');
  const signature = sign('sha256', body, { key: privateKey, dsaEncoding: 'der' }).toString('base64');

  it('accepts the signature of the exact bytes', () => {
    expect(isValidReportSignature(body, signature, publicKey)).toBe(true);
  });

  it('refuses other bytes, another key, garbage and P1363 encodings', () => {
    expect(isValidReportSignature(Buffer.from(`${body.toString()} `), signature, publicKey)).toBe(false);
    expect(isValidReportSignature(body, signature, other.publicKey)).toBe(false);
    expect(isValidReportSignature(body, '', publicKey)).toBe(false);
    expect(isValidReportSignature(body, 'not base64!', publicKey)).toBe(false);
    expect(isValidReportSignature(body, 'A'.repeat(400), publicKey)).toBe(false);
    const p1363 = sign('sha256', body, { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64');
    expect(isValidReportSignature(body, p1363, publicKey)).toBe(false);
  });
});
