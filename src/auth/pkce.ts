/**
 * PKCE (RFC 7636) for OAuth codes: the app sends a challenge when asking for a code and the verifier
 * when exchanging it. `S256`: challenge = base64url(SHA-256(verifier)); `plain`: challenge = verifier.
 * Codes themselves are random and stored only as SHA-256.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CodeChallengeMethod } from '../store/account-auth-store.js';

/** RFC 7636 §4.1/4.2: 43–128 unreserved characters (an S256 challenge is exactly 43). */
export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

export const CODE_TTL_MS = 10 * 60 * 1000;

export function newAuthorizationCode(): string {
  return randomBytes(32).toString('base64url');
}

export function hashAuthorizationCode(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

export function challengeOf(verifier: string, method: CodeChallengeMethod): string {
  return method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
}

/**
 * Whether `verifier` is a verifier (RFC 7636 §4.1: 43–128 unreserved characters, a high-entropy
 * random string) whose challenge is the stored one, compared in constant time. A short or malformed
 * verifier never matches: with S256 its challenge has a valid form, so only this check keeps an app
 * from protecting its codes with a guessable verifier.
 */
export function verifierMatches(verifier: string, challenge: string, method: CodeChallengeMethod): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  // Hash both sides so lengths never differ and the comparison leaks nothing.
  const a = createHash('sha256').update(challengeOf(verifier, method)).digest();
  const b = createHash('sha256').update(challenge).digest();
  return timingSafeEqual(a, b);
}
