import { describe, expect, it } from 'vitest';
import { escapeHtml } from './html-escape.js';
import { keyCompromisedMail, keyExpiryMail, keyLimitMail, lowBalanceMail } from './templates.js';

describe('mail templates', () => {
  const key = { name: '<b>"prod" & co\'s</b>', label: 'sk-tg-v1-abc...xyz' };

  it('escapes every value in HTML and keeps text as is', () => {
    const mail = keyCompromisedMail({
      key,
      reportedBy: 'scanner',
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
      reportedBy: 'scanner',
      url: null,
      source: 'scanner\nBcc: x',
      reason: 'a\u2028b',
      dashboard: null,
    });
    expect(mail.text).not.toMatch(/prod[\r\n]/);
    expect(mail.text).toContain('"prod    Click https://evil.example to restore it " (sk-tg-v1-abc...xyz)');
    expect(mail.text).toContain('Found in: scanner Bcc: x');
    expect(mail.text).toContain('Reason: a b');
    expect(mail.html).not.toContain('\u202e');
    // The template's own paragraph breaks stay.
    expect(mail.text.split('\n\n').length).toBeGreaterThan(2);
  });

  it('links only http(s) URLs', () => {
    const mail = keyCompromisedMail({
      key,
      reportedBy: 'scanner',
      url: 'javascript:alert(1)',
      source: null,
      reason: null,
      dashboard: null,
    });
    expect(mail.html).not.toContain('href="javascript');
    expect(mail.html).toContain('javascript:alert(1)');
  });

  it('names the level and window of a key limit; a total limit is not said to reset', () => {
    const monthly = { key, limitUsd: '5.00', usedUsd: '4.00', window: 'monthly', resets: true, dashboard: null };
    expect(keyLimitMail({ ...monthly, percent: 80 }).subject).toBe(
      'Your Tollgate API key sk-tg-v1-abc...xyz has used 80 % of its monthly limit',
    );
    expect(keyLimitMail({ ...monthly, percent: 100 }).text).toContain('until the window resets or the limit is raised');
    const total = { ...monthly, window: 'total', resets: false };
    for (const percent of [80, 100] as const) {
      const text = keyLimitMail({ ...total, percent }).text;
      expect(text).toContain('until the limit is raised');
      expect(text).not.toContain('window');
    }
  });

  it('a key the operator marked is not said to have been found anywhere', () => {
    const marked = keyCompromisedMail({
      key,
      reportedBy: 'operator',
      url: null,
      source: null,
      reason: 'left in a laptop',
      dashboard: null,
    });
    expect(marked.text).toContain('The operator of this gateway reported your API key');
    expect(marked.text).not.toContain('found where others can read it');
    expect(marked.text).toContain('Reason: left in a laptop');
    const scanned = keyCompromisedMail({
      key,
      reportedBy: 'scanner',
      url: 'https://github.com/o/r',
      source: 'commit',
      reason: null,
      dashboard: null,
    });
    expect(scanned.text).toContain('was found where others can read it');
    expect(scanned.text).toContain('Found in: commit');
    // A code host's report that says neither where nor what kind of place is still the code host's.
    const bare = keyCompromisedMail({
      key,
      reportedBy: 'scanner',
      url: null,
      source: null,
      reason: null,
      dashboard: null,
    });
    expect(bare.text).toContain('was found where others can read it');
    expect(bare.text).not.toContain('operator');
    // A name is text, never a replacement pattern.
    const dollar = keyCompromisedMail({
      key: { name: "a$'b$&c", label: key.label },
      reportedBy: 'scanner',
      url: null,
      source: null,
      reason: null,
      dashboard: null,
    });
    expect(dollar.text).toContain(`"a$'b$&c"`);
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
