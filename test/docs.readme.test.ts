/** The README's configuration example is a real, valid configuration (docs that cannot drift). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load-config.js';

describe('README', () => {
  it('its YAML configuration example loads', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const match = /```yaml\n(providers:[\s\S]*?)```/.exec(readme);
    expect(match).not.toBeNull();
    const config = loadConfig({ TOLLGATE_CONFIG: 'readme.yaml', OPENAI_API_KEY: 'sk-example' }, () => match![1]!);
    expect(config.models[0]?.id).toBe('openai/gpt-4o-mini');
    expect(config.providers[0]?.api_key).toBe('sk-example');
  });
});
