import { describe, expect, it } from 'vitest';
import { escapeHtml } from './html-escape.js';
import { keyCompromisedMail, keyExpiryMail, keyLimitMail, lowBalanceMail } from './templates.js';

describe('mail templates', () => {
  const key = { name: '<b>"prod" & co\'s</b>', label: 'sk-tg-v1-abc...xyz' };

  it('escapes every value in HTML and keeps text as is', () => {
    const mail = keyCompromisedMail({
      key,
      url: 'https://example.com/a?x=1&y="2"',
      source: '<img src=x>',
      reason: null,
      dashboard: null,
    });
    expect(mail.html).not.toContain('<b>');
    expect(mail.html).not.toContain('<img');
    expect(mail.html).toContain(escapeHtml(key.name));
    expect(mail.html).toContain('href="https://example.com/a?x=1&amp;y=&quot;2&quot;"');
    expect(mail.text).toContain(key.name);
    expect(mail.subject).toContain(key.label);
  });

  it('keeps every value on its line: control characters and bidi overrides become spaces', () => {
    const hostile = { name: 'prod\r\n\r\nClick https://evil.example to restore it\u202e', label: 'sk-tg-v1-abc...xyz' };
    const mail = keyCompromisedMail({
      key: hostile,
      url: null,
      source: 'scanner\nBcc: x',
      reason: 'a\u2028b',
      dashboard: null,
    });
    expect(mail.text).not.toMatch(/prod[\r\n]/);
    expect(mail.text).toContain('"prod    Click https://evil.example to restore it " (sk-tg-v1-abc...xyz)');
    expect(mail.text).toContain('Reported by: scanner Bcc: x');
    expect(mail.text).toContain('Reason: a b');
    expect(mail.html).not.toContain('\u202e');
    // The template's own paragraph breaks stay.
    expect(mail.text.split('\n\n').length).toBeGreaterThan(2);
  });

  it('links only http(s) URLs', () => {
    const mail = keyCompromisedMail({ key, url: 'javascript:alert(1)', source: null, reason: null, dashboard: null });
    expect(mail.html).not.toContain('href="javascript');
    expect(mail.html).toContain('javascript:alert(1)');
  });

  it('names the level and window of a key limit', () => {
    expect(
      keyLimitMail({ key, percent: 80, limitUsd: '5.00', usedUsd: '4.00', window: 'monthly', dashboard: null }).subject,
    ).toBe('Your Tollgate API key sk-tg-v1-abc...xyz has used 80 % of its monthly limit');
  });

  it('ends a notice with where to act in the dashboard, and how to turn such notices off', () => {
    const linked = lowBalanceMail({ balanceUsd: '0.5', thresholdUsd: '1.00', dashboard: 'https://gw.example/' });
    expect(linked.text).toContain('Your balance and credit history: https://gw.example/credits');
    expect(linked.text).toContain('To change or turn off these notices: https://gw.example/settings');
    expect(linked.html).toContain('<a href="https://gw.example/settings">');
    // Without mail.public_url: the page's name, no link.
    const named = keyExpiryMail({ key, expiresAt: '2027-01-01T00:00:00.000Z', dashboard: null });
    expect(named.text).toContain("To change or turn off these notices: the dashboard's Settings page.");
    expect(named.html).not.toContain('<a ');
  });
});
