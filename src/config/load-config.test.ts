import { describe, expect, it } from 'vitest';
import { buildCatalog } from '../routing/catalog.js';
import { DEMO_PROVIDER_ID } from './demo-catalog.js';
import { ConfigError, loadConfig } from './load-config.js';

const yaml = (text: string) => () => text;

describe('loadConfig', () => {
  it('starts in demo mode without a config file', () => {
    const config = loadConfig({});
    expect(config.demo).toBe(true);
    expect(config.models.map((m) => m.id)).toContain('tollgate/demo-chat');
    expect(config.port).toBe(8080);
    expect(Object.isFrozen(config.models[0])).toBe(true);
  });

  it('a config file that cannot be read is the one problem reported (not also "no models")', () => {
    let error: unknown;
    try {
      loadConfig({ TOLLGATE_CONFIG: '/nonexistent/tollgate.yaml' }, () => {
        throw new Error("ENOENT: no such file or directory, open '/nonexistent/tollgate.yaml'");
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      "TOLLGATE_CONFIG (/nonexistent/tollgate.yaml): ENOENT: no such file or directory, open '/nonexistent/tollgate.yaml'",
    ]);
  });

  it('refuses a PORT that is not a port number, an empty one too (it would listen on a random port)', () => {
    for (const port of ['', ' ', 'eighty', '-1', '99999', '80.5'])
      expect(() => loadConfig({ PORT: port }), JSON.stringify(port)).toThrow(/PORT: must be a port number/);
    expect(loadConfig({ PORT: ' 9000 ' }).port).toBe(9000);
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
  });

  it('names DATABASE_URL or REDIS_URL when it cannot be read as a URL, with the fix, never the password', () => {
    for (const [name, url] of [
      ['DATABASE_URL', 'postgres://u:Pw99@127.0.0.1:99999/db'],
      ['DATABASE_URL', 'postgres://u:SeCrEtPw99@host:notaport/db'],
      ['DATABASE_URL', 'postgres://u:p@ss#SeCrEt@127.0.0.1:5432/db'],
      ['REDIS_URL', 'redis://:ReDiSSeCrEt@h:xx'],
    ] as const) {
      let error: unknown;
      try {
        loadConfig({ [name]: url });
      } catch (e) {
        error = e;
      }
      expect(error, url).toBeInstanceOf(ConfigError);
      const text = (error as ConfigError).problems.join('\n');
      expect(text).toContain(`${name}: is not a URL that can be read`);
      expect(text).toContain('percent-encode');
      expect(text).not.toMatch(/SeCrEt|Pw99|ss#/i);
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p%40ss%23x@127.0.0.1:5432/db' }).databaseUrl).toBe(
      'postgres://u:p%40ss%23x@127.0.0.1:5432/db',
    );
    // Every form the drivers take still passes: a socket, an empty host, IPv6, options, TLS.
    for (const url of [
      'postgres:///tollgate?host=/var/run/postgresql',
      'postgresql://u:pw@/tollgate',
      'postgres://u:pw@[::1]:5432/db?sslmode=require&application_name=tollgate',
      'postgres://u:p%20w@localhost/db?options=-c%20search_path%3Dx',
    ])
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl, url).toBe(url);
    for (const url of ['redis://127.0.0.1:6379/0', 'rediss://:pw@[::1]:6380/2', 'redis://localhost'])
      expect(loadConfig({ REDIS_URL: url }).redisUrl, url).toBe(url);
  });

  it('interpolates ${VAR} and applies defaults', () => {
    const config = loadConfig(
      { TOLLGATE_CONFIG: 'x.yaml', OPENAI_KEY: 'secret', PORT: '9000' },
      yaml(`
providers:
  - { id: openai, name: OpenAI, kind: openai, base_url: "https://api.openai.com/v1", api_key: "\${OPENAI_KEY}" }
models:
  - id: openai/gpt-4o-mini
    name: GPT-4o mini
    context_length: 128000
    endpoints:
      - { provider: openai, model: gpt-4o-mini, pricing: { prompt: "0.00000015", completion: "0.0000006" } }
`),
    );
    expect(config.demo).toBe(false);
    expect(config.providers[0]?.api_key).toBe('secret');
    expect(config.providers[0]?.timeouts.connect_ms).toBe(10_000);
    expect(config.port).toBe(9000);
    expect(config.limits.free_models.per_day).toBe(50);
  });

  it('reports every problem at once', () => {
    let error: unknown;
    try {
      loadConfig(
        { TOLLGATE_CONFIG: 'x.yaml', PORT: 'eighty', TOLLGATE_ADMIN_TOKEN: 'short' },
        yaml(`
providers:
  - { id: Bad Id, name: X, kind: nope, api_key: "\${MISSING}" }
models:
  - id: noslash
    name: M
    context_length: 10
    endpoints: [{ provider: ghost, model: m, pricing: { prompt: "-1", completion: "0" } }]
`),
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).problems.join('\n');
    for (const fragment of [
      'MISSING',
      'providers.0.id',
      'providers.0.kind',
      'models.0.id',
      'ghost',
      'pricing.prompt',
      'PORT',
      'TOLLGATE_ADMIN_TOKEN',
    ]) {
      expect(text).toContain(fragment);
    }
  });

  it('drops the trailing newline of a key read from a secret, and refuses what a request header cannot carry', () => {
    const config = (key: string, headers: string) =>
      loadConfig(
        { TOLLGATE_CONFIG: 'x.yaml', KEY: key },
        yaml(`
providers:
  - { id: up, name: Up, kind: openai, base_url: "https://up.example/v1", api_key: "\${KEY}", headers: ${headers} }
models:
  - id: up/m
    name: M
    context_length: 1000
    endpoints: [{ provider: up, model: m, pricing: { prompt: "0", completion: "0" } }]
`),
      );
    expect(config('sk-live-123\n', '{}').providers[0]?.api_key).toBe('sk-live-123');
    const problems = (make: () => unknown): string => {
      try {
        make();
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
      return '';
    };
    expect(problems(() => config('sk-live\n123', '{}'))).toContain('providers.0.api_key');
    expect(problems(() => config('sk live', '{}'))).toContain('providers.0.api_key');
    expect(problems(() => config('k', '{ "x-org": "a\\r\\nx-injected: 1" }'))).toContain('providers.0.headers');
    expect(problems(() => config('k', '{ "bad name": "v" }'))).toContain('providers.0.headers');
    expect(problems(() => config('k', '{ "x-org": "acme org" }'))).toBe('');
  });

  it("reads providers' and endpoints' data policies; zdr with data_collection: allow is a contradiction", () => {
    const load = (provider: string, endpoint: string) =>
      loadConfig(
        { TOLLGATE_CONFIG: 'x.yaml' },
        yaml(`
providers:
  - { id: up, name: Up, kind: openai, base_url: "https://up.example/v1"${provider} }
models:
  - id: up/m
    name: M
    context_length: 1000
    endpoints: [{ provider: up, model: m, pricing: { prompt: "0", completion: "0" }${endpoint} }]
`),
      );
    const undeclared = buildCatalog(load('', '')).models.get('up/m')?.endpoints[0];
    expect(undeclared?.dataPolicy).toEqual({ dataCollection: 'allow', zdr: false });
    const zdrProvider = buildCatalog(load(', zdr: true', '')).providers.get('up');
    expect(zdrProvider?.dataPolicy).toEqual({ dataCollection: 'deny', zdr: true });
    const own = buildCatalog(load(', zdr: true', ', data_collection: deny')).models.get('up/m')?.endpoints[0];
    expect(own?.dataPolicy).toEqual({ dataCollection: 'deny', zdr: false });
    const problems = (make: () => unknown): string => {
      try {
        make();
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
      return '';
    };
    expect(problems(() => load(', zdr: true, data_collection: allow', ''))).toContain('providers.0.data_collection');
    expect(problems(() => load('', ', zdr: true, data_collection: allow'))).toContain(
      'models.0.endpoints.0.data_collection',
    );
    expect(problems(() => load(', data_collection: maybe', ''))).toContain('providers.0.data_collection');
  });

  it('declares the built-in demo provider as it is: it keeps nothing', () => {
    expect(
      buildCatalog(loadConfig({}), { demoBaseUrl: 'http://127.0.0.1:1' }).providers.get(DEMO_PROVIDER_ID)?.dataPolicy,
    ).toEqual({ dataCollection: 'deny', zdr: true });
  });

  it("rejects unreadable YAML with a clear message: where, not ending mid-sentence, without the file's lines", () => {
    expect(() => loadConfig({ TOLLGATE_CONFIG: 'x.yaml' }, yaml('providers: [unclosed'))).toThrow(ConfigError);
    let error: unknown;
    try {
      loadConfig({ TOLLGATE_CONFIG: 'x.yaml' }, yaml('providers:\n  - id: a\napi_key: sk-secret-in-file\n - id: b\n'));
    } catch (e) {
      error = e;
    }
    const [problem] = (error as ConfigError).problems;
    expect(problem).toMatch(/^TOLLGATE_CONFIG \(.*x\.yaml\): .* at line \d+, column \d+$/);
    expect(problem).not.toContain('sk-secret-in-file');
  });
});
