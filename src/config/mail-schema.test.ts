import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, loadConfig } from './load-config.js';

const minimal = {
  providers: [{ id: 'p', name: 'P', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }],
  models: [
    {
      id: 'a/b',
      name: 'b',
      context_length: 100,
      endpoints: [{ provider: 'p', model: 'b', pricing: { prompt: '0', completion: '0' } }],
    },
  ],
};

function load(extra: Record<string, unknown>, env: Record<string, string> = {}) {
  return loadConfig({ TOLLGATE_CONFIG: 'x.yaml', ...env }, () => stringify({ ...minimal, ...extra }));
}

describe('mail, secret_scanning and notifications config', () => {
  it('has safe defaults: mail recorded, not sent; redaction on', () => {
    const config = load({});
    expect(config.smtpUrl).toBeNull();
    expect(config.secret_scanning.in_requests).toBe('redact');
    expect(config.secret_scanning.public_keys).toEqual([]);
    expect(config.notifications.low_balance_threshold).toBe(1);
    expect(config.notifications.key_expiry_days).toBe(7);
  });

  it('accepts a P-256 public key and an SMTP URL', () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    const config = load(
      {
        secret_scanning: { public_keys: [{ key_identifier: 'k', key: pem }] },
        mail: { from: 'Ops <ops@example.com>' },
      },
      { TOLLGATE_SMTP_URL: 'smtps://u:p@mail.example.com:465' },
    );
    expect(config.smtpUrl).toBe('smtps://u:p@mail.example.com:465');
    expect(config.secret_scanning.public_keys).toHaveLength(1);
  });

  it('reports a bad key, another curve, a bad sender and a bad SMTP URL together at boot', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    let error: unknown;
    try {
      load(
        {
          secret_scanning: {
            public_keys: [
              { key_identifier: 'a', key: 'nope' },
              { key_identifier: 'b', key: p384 },
            ],
            in_requests: 'maybe',
          },
          mail: { from: 'nobody' },
        },
        { TOLLGATE_SMTP_URL: 'http://x' },
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    expect(problems).toContain('secret_scanning.public_keys.0.key: is not a PEM public key');
    expect(problems).toContain('secret_scanning.public_keys.1.key: must be an ECDSA P-256 public key (PEM)');
    expect(problems).toContain('secret_scanning.in_requests');
    expect(problems).toContain('mail.from');
    expect(problems).toContain('TOLLGATE_SMTP_URL');
  });
});
