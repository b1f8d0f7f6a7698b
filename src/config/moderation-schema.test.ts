import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';

const BASE = `
providers:
  - { id: p, name: P, kind: openai, base_url: "http://127.0.0.1:1/v1" }
models:
  - id: a/b
    name: B
    context_length: 1000
    endpoints: [{ provider: p, model: b, pricing: { prompt: "0", completion: "0" } }]
`;

function load(moderation: string, env: Record<string, string> = {}) {
  return loadConfig({ TOLLGATE_CONFIG: 'x.yaml', ...env }, () => `${BASE}\nmoderation:\n${moderation}`);
}

function problems(moderation: string): string[] {
  try {
    load(moderation);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('moderation config', () => {
  it('is off by default', () => {
    const config = loadConfig({ TOLLGATE_CONFIG: 'x.yaml' }, () => BASE);
    expect(config.moderation).toEqual({ mode: 'off', patterns: [], on_error: 'block', applies_to: 'all' });
  });

  it('reads patterns (flags default "i") and an endpoint with ${VAR} and defaults', () => {
    const patterns = load(
      `  mode: patterns\n  patterns:\n    - { pattern: "\\\\bbad\\\\b", reason: bad word }\n    - { pattern: "X", flags: "", reason: x }\n  applies_to: [a/b]`,
    );
    expect(patterns.moderation.patterns).toEqual([
      { pattern: '\\bbad\\b', flags: 'i', reason: 'bad word' },
      { pattern: 'X', flags: '', reason: 'x' },
    ]);
    expect(patterns.moderation.applies_to).toEqual(['a/b']);
    const endpoint = load(
      `  mode: openai\n  endpoint: { base_url: "https://api.openai.com/v1", api_key: "\${MOD_KEY}" }\n  on_error: allow`,
      { MOD_KEY: 'sk-mod' },
    );
    expect(endpoint.moderation.endpoint).toEqual({
      base_url: 'https://api.openai.com/v1',
      api_key: 'sk-mod',
      model: 'omni-moderation-latest',
      timeout_ms: 3000,
    });
    expect(endpoint.moderation.on_error).toBe('allow');
  });

  it('reports an invalid regex, stateful flags, a mode without settings and unknown applies_to models at boot', () => {
    expect(problems(`  mode: patterns\n  patterns: [{ pattern: "(unclosed", reason: r }]`).join('\n')).toMatch(
      /moderation\.patterns\.0\.pattern: invalid regular expression/,
    );
    expect(problems(`  mode: patterns\n  patterns: [{ pattern: "x", flags: "g", reason: r }]`).join('\n')).toMatch(
      /moderation\.patterns\.0\.flags/,
    );
    expect(problems(`  mode: patterns`).join('\n')).toMatch(
      /moderation\.patterns: mode "patterns" needs at least one pattern/,
    );
    expect(problems(`  mode: openai`).join('\n')).toMatch(
      /moderation\.endpoint: mode "openai" needs endpoint\.base_url/,
    );
    expect(
      problems(`  mode: patterns\n  patterns: [{ pattern: "x", reason: r }]\n  applies_to: [a/b, ghost/model]`),
    ).toContain('config moderation.applies_to.1: unknown model "ghost/model"');
    expect(problems(`  mode: sometimes`).join('\n')).toMatch(/moderation\.mode/);
  });
});
