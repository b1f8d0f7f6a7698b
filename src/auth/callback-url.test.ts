import { describe, expect, it } from 'vitest';
import { callbackWith, checkCallbackUrl, parseCallbackUrl } from './callback-url.js';

describe('OAuth callback URLs', () => {
  it.each([
    'https://app.example.com/callback',
    'https://app.example.com:8443/cb?state=1',
    'http://localhost:3000/callback',
    'http://127.0.0.1:49152/cb',
    'http://[::1]:8080/cb',
  ])('accepts %s', (raw) => {
    expect(parseCallbackUrl(raw)?.href).toBe(new URL(raw).href);
  });

  it.each([
    ['', 'missing'],
    [undefined, 'missing'],
    ['javascript:alert(1)', 'scheme'],
    ['data:text/html,<script>alert(1)</script>', 'scheme'],
    ['http://evil.example.com/cb', 'scheme'],
    ['http://localhost.evil.example.com/cb', 'scheme'],
    ['http://127.0.0.1.nip.io/cb', 'scheme'],
    ['https://user:pw@app.example.com/cb', 'credentials'],
    ['https://localhost@evil.example.com/cb', 'credentials'],
    ['http://localhost:80@evil.example.com/', 'credentials'],
    ['https://app.example.com/cb#frag', 'fragment'],
    ['//evil.example.com/cb', 'unparsable'],
    ['/relative', 'unparsable'],
    ['https://app.example.com/\ncb', 'unparsable'],
    ['https:\\\\evil.example.com', 'unparsable'],
    ['ftp://app.example.com/cb', 'scheme'],
    [`https://app.example.com/${'a'.repeat(3000)}`, 'too_long'],
  ])('refuses %s (%s)', (raw, problem) => {
    const result = checkCallbackUrl(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problem).toBe(problem);
  });

  it('adds the code to the query and keeps what was there', () => {
    const url = parseCallbackUrl('https://app.example.com/cb?state=xyz')!;
    expect(callbackWith(url, { code: 'abc' })).toBe('https://app.example.com/cb?state=xyz&code=abc');
  });
});
