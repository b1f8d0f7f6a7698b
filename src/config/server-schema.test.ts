import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';
import { isProxyNetwork, serverSchema } from './server-schema.js';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('server config', () => {
  it('trust_proxy: false, true, a hop count, or a list of proxy networks', () => {
    for (const value of [false, true, 1, 3, ['10.0.0.0/8', '::1', 'fd00::/8', 'loopback', '192.168.1.7']])
      expect(serverSchema.safeParse({ trust_proxy: value }).success, JSON.stringify(value)).toBe(true);
    for (const value of [
      0,
      -1,
      1.5,
      [],
      ['10.0.0.0/33'],
      ['10.0.0'],
      ['example.com'],
      ['::1/129'],
      ['10.0.0.0/8/8'],
      'yes',
    ])
      expect(serverSchema.safeParse({ trust_proxy: value }).success, JSON.stringify(value)).toBe(false);
    expect(isProxyNetwork('0.0.0.0/0')).toBe(true);
  });

  it('defaults: small bodies off the chat route, JSON limits, a connection cap, metrics on the API listener', () => {
    const server = serverSchema.parse({});
    expect(server).toMatchObject({
      body_limit_bytes: 4 * 1024 * 1024,
      small_body_limit_bytes: 64 * 1024,
      json_max_depth: 64,
      json_max_elements: 100_000,
      max_connections: 8192,
      metrics: null,
      trust_proxy: false,
    });
  });

  it('refuses a blank, padded-to-length or short admin token at boot, and trims a trailing newline', () => {
    for (const token of [' '.repeat(16), '\t'.repeat(20), `   short-token  `, 'sixteen chars ok', 'x'.repeat(15)]) {
      expect(
        problemsOf({ TOLLGATE_ADMIN_TOKEN: token }).some((p) => p.startsWith('env TOLLGATE_ADMIN_TOKEN')),
        JSON.stringify(token),
      ).toBe(true);
    }
    expect(loadConfig({ TOLLGATE_ADMIN_TOKEN: 'a-real-admin-token-0001\n' }).adminToken).toBe(
      'a-real-admin-token-0001',
    );
    expect(
      problemsOf({ TOLLGATE_METRICS_TOKEN: ' '.repeat(20) }).some((p) => p.startsWith('env TOLLGATE_METRICS_TOKEN')),
    ).toBe(true);
    expect(loadConfig({ TOLLGATE_METRICS_TOKEN: 'metrics-token-0000001' }).metricsToken).toBe('metrics-token-0000001');
  });
});
