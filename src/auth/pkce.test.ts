import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { challengeOf, hashAuthorizationCode, newAuthorizationCode, PKCE_VALUE, verifierMatches } from './pkce.js';
import { csrfTokenFor, csrfTokenMatches, hashSessionToken } from './sessions.js';

describe('PKCE', () => {
  // RFC 7636 appendix B.
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  it('S256 is base64url(SHA-256(verifier)) — the RFC 7636 example', () => {
    expect(challengeOf(verifier, 'S256')).toBe(challenge);
    expect(verifierMatches(verifier, challenge, 'S256')).toBe(true);
    expect(verifierMatches(challenge, challenge, 'S256')).toBe(false);
    expect(verifierMatches(`${verifier}x`, challenge, 'S256')).toBe(false);
  });

  it('plain compares the verifier itself', () => {
    expect(verifierMatches(verifier, verifier, 'plain')).toBe(true);
    expect(verifierMatches(verifier, challenge, 'plain')).toBe(false);
  });

  it('a verifier outside RFC 7636 §4.1 never matches, even when its S256 challenge does', () => {
    for (const weak of ['abc', 'a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(43)} `, `${'a'.repeat(42)}é`])
      expect(verifierMatches(weak, challengeOf(weak, 'S256'), 'S256')).toBe(false);
    expect(verifierMatches('a'.repeat(43), challengeOf('a'.repeat(43), 'S256'), 'S256')).toBe(true);
  });

  it('values must be 43-128 unreserved characters', () => {
    expect(PKCE_VALUE.test(verifier)).toBe(true);
    expect(PKCE_VALUE.test('a'.repeat(42))).toBe(false);
    expect(PKCE_VALUE.test('a'.repeat(129))).toBe(false);
    expect(PKCE_VALUE.test(`${'a'.repeat(43)} `)).toBe(false);
  });

  it('codes are random and stored as their SHA-256', () => {
    const code = newAuthorizationCode();
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newAuthorizationCode()).not.toBe(code);
    expect(hashAuthorizationCode(code)).toBe(createHash('sha256').update(code).digest('hex'));
  });
});

describe('session tokens', () => {
  it('the CSRF token is bound to its session token and reveals nothing of it', () => {
    const token = 'A'.repeat(43);
    const csrf = csrfTokenFor(token);
    expect(csrf).not.toContain(token);
    expect(csrf).not.toBe(hashSessionToken(token)); // not the stored hash either
    expect(csrfTokenMatches(token, csrf)).toBe(true);
    expect(csrfTokenMatches('B'.repeat(43), csrf)).toBe(false);
    expect(csrfTokenMatches(token, undefined)).toBe(false);
    expect(csrfTokenMatches(token, `${csrf}x`)).toBe(false);
  });
});
