import { describe, expect, it } from 'vitest';
import { appIdentity, MAX_TITLE_LENGTH, normaliseReferer, normaliseTitle } from './app-identity.js';

describe('normaliseReferer', () => {
  it('keeps only the origin: no path, query, fragment or credentials; default ports dropped; host lower-cased', () => {
    expect(normaliseReferer('https://App.Example.com:443/chat?token=secret#x')).toEqual({
      origin: 'https://app.example.com',
      loopback: false,
    });
    expect(normaliseReferer('https://user:pass@example.com/')?.origin).toBe('https://example.com');
    expect(normaliseReferer('http://example.com:8080')?.origin).toBe('http://example.com:8080');
    expect(normaliseReferer('  https://example.com  ')?.origin).toBe('https://example.com');
    expect(normaliseReferer('https://bücher.example/')?.origin).toBe('https://xn--bcher-kva.example');
  });

  it('flags loopback origins', () => {
    for (const url of [
      'http://localhost:3000',
      'http://app.localhost',
      'http://127.0.0.1:8080/x',
      'http://[::1]:5173',
      'http://0.0.0.0',
    ]) {
      expect(normaliseReferer(url)?.loopback, url).toBe(true);
    }
    expect(normaliseReferer('https://localhost.example.com')?.loopback).toBe(false);
  });

  it('ignores junk: non-URLs, other schemes, over-long values, control characters, absurd hosts', () => {
    for (const junk of [
      null,
      undefined,
      '',
      'example.com',
      'not a url',
      'javascript:alert(1)',
      'data:text/html,<b>x</b>',
      'ftp://example.com',
      'file:///etc/passwd',
      `https://example.com/${'a'.repeat(2100)}`,
      'https://exa\u0000mple.com',
      'https://example.com/\r\nSet-Cookie: x',
      `https://${'a'.repeat(64)}.example.com`,
      `https://${'a.'.repeat(130)}com`,
    ]) {
      expect(normaliseReferer(junk), String(junk)).toBeNull();
    }
  });
});

describe('normaliseTitle', () => {
  it('trims, collapses whitespace, strips invisible and bidi characters, bounds the length', () => {
    expect(normaliseTitle('  My   App \t ')).toBeNull(); // a tab is a control character: junk
    expect(normaliseTitle('  My   App  ')).toBe('My App');
    expect(normaliseTitle('Evil\u202eppA')).toBe('EvilppA');
    expect(normaliseTitle('a\u200bb')).toBe('ab');
    expect(normaliseTitle('x'.repeat(500))).toHaveLength(MAX_TITLE_LENGTH);
    expect([...normaliseTitle('😀'.repeat(200))!]).toHaveLength(MAX_TITLE_LENGTH); // whole code points, no broken surrogate
    expect(normaliseTitle('   ')).toBeNull();
    expect(normaliseTitle('bad\u0007bell')).toBeNull();
    expect(normaliseTitle('<script>alert(1)</script>')).toBe('<script>alert(1)</script>'); // kept as text; escaped by JSON and the UI
  });

  it('decodes UTF-8 sent in a header (Node reads header bytes as latin1)', () => {
    expect(normaliseTitle(Buffer.from('Café Ünïcode', 'utf8').toString('latin1'))).toBe('Café Ünïcode');
    expect(normaliseTitle('Caf\u00e9')).toBe('Caf\u00e9'); // valid latin1 that is not UTF-8 stays as it is
  });
});

describe('appIdentity', () => {
  it('is the origin, named by the title or else the host; the same app whatever the path', () => {
    const a = appIdentity('https://app.example.com/one?x=1', 'My App')!;
    const b = appIdentity('https://app.example.com/two', null)!;
    expect(a).toMatchObject({
      key: 'https://app.example.com',
      origin: 'https://app.example.com',
      name: 'My App',
      titled: true,
    });
    expect(b).toMatchObject({ key: 'https://app.example.com', name: 'app.example.com', titled: false });
    expect(a.id).toBe(b.id);
    expect(Number.isSafeInteger(a.id) && a.id > 0).toBe(true);
    expect(appIdentity('https://other.example.com', 'My App')!.id).not.toBe(a.id);
  });

  it('a loopback referer counts only with a title, and the title is part of its identity', () => {
    expect(appIdentity('http://localhost:3000/', null)).toBeNull();
    expect(appIdentity('http://localhost:3000/', '   ')).toBeNull();
    const one = appIdentity('http://localhost:3000/', 'Tool One')!;
    const two = appIdentity('http://localhost:3000/', 'Tool Two')!;
    expect(one.key).toBe('http://localhost:3000#Tool One');
    expect(one.id).not.toBe(two.id);
  });

  it('no referer, or a junk one, is no app even with a title', () => {
    expect(appIdentity(null, 'Title')).toBeNull();
    expect(appIdentity('javascript:alert(1)', 'Title')).toBeNull();
  });
});
