import { describe, expect, it } from 'vitest';
import { loggableUrl } from './loggable-url.js';

describe('loggableUrl', () => {
  it('keeps a URL without secrets as it came', () => {
    expect(loggableUrl('/api/v1/activity?date=2026-11-25')).toBe('/api/v1/activity?date=2026-11-25');
    expect(loggableUrl('/api/v1/models')).toBe('/api/v1/models');
  });

  it('drops the values of secret-bearing parameters, whatever their case', () => {
    const logged = loggableUrl('/reset-password?token=abc123secret&next=%2Fkeys');
    expect(logged).not.toContain('abc123secret');
    expect(logged).toBe('/reset-password?token=%5Bredacted%5D&next=%2Fkeys');
    expect(loggableUrl('/x?Code=c1&code=c2&API_KEY=sk-or-v1-zzz')).not.toMatch(/c1|c2|sk-or/);
  });

  it('drops the values of secret-bearing parameters under their usual spellings', () => {
    for (const name of ['apiKey', 'api-key', 'Authorization', 'access-token', 'client_secret', 'code_challenge'])
      expect(loggableUrl(`/x?${name}=s3cr3t&page=2`)).toBe(`/x?${name}=%5Bredacted%5D&page=2`);
  });

  it('cuts out anything shaped like a Tollgate key, in the path or under any parameter name', () => {
    const key = `sk-tg-v1-${'ab12'.repeat(16)}`;
    expect(loggableUrl(`/api/v1/keys/${key}`)).toBe('/api/v1/keys/[redacted]');
    expect(loggableUrl(`/api/v1/chat/completions?k=${key}`)).not.toContain('ab12');
    expect(loggableUrl(`/x?note=${key.toUpperCase()}`)).not.toMatch(/AB12/);
  });
});
