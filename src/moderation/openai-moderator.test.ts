import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockProvider, type MockProvider } from '../providers/mock-server.js';
import { OpenAiModerator, verdictOf } from './openai-moderator.js';
import { ModerationFailure } from './types.js';

let provider: MockProvider;
beforeAll(async () => {
  provider = await startMockProvider();
});
afterAll(() => provider.close());

const moderator = (overrides: Partial<ConstructorParameters<typeof OpenAiModerator>[0]> = {}) =>
  new OpenAiModerator({
    baseUrl: provider.url,
    apiKey: 'sk-moderation',
    model: 'omni-moderation-latest',
    timeoutMs: 1000,
    ...overrides,
  });

describe('OpenAiModerator', () => {
  it('passes clean text and sends nothing for no text', async () => {
    provider.reset();
    expect(await moderator().check({ texts: ['hello', 'world'], model: 'x/y' })).toEqual({ flagged: false });
    expect(await moderator().check({ texts: [], model: 'x/y' })).toEqual({ flagged: false });
    expect(provider.stats.moderations).toBe(1);
  });

  it('reports the flagged categories and the first flagged text', async () => {
    const verdict = await moderator().check({
      texts: ['fine', 'bad mock-flag:violence', 'worse mock-flag:hate mock-flag:violence'],
      model: 'x/y',
    });
    expect(verdict).toEqual({ flagged: true, reasons: ['violence', 'hate'], flaggedInput: 'bad mock-flag:violence' });
  });

  it('names itself OpenAI unless told otherwise; tolerates a trailing slash in the base URL', async () => {
    expect(moderator().name).toBe('OpenAI');
    const named = moderator({ name: 'Acme Safety', baseUrl: `${provider.url}/` });
    expect(named.name).toBe('Acme Safety');
    expect((await named.check({ texts: ['mock-flag:illicit'], model: 'x/y' })).flagged).toBe(true);
  });

  it('fails (ModerationFailure) on an error status, a missing key, a timeout and an unreachable endpoint', async () => {
    await expect(
      moderator({ model: 'omni-moderation-latest@status=500' }).check({ texts: ['x'], model: 'm' }),
    ).rejects.toThrow(/answered HTTP 500/);
    await expect(moderator({ apiKey: null }).check({ texts: ['x'], model: 'm' })).rejects.toThrow(/answered HTTP 401/);
    const started = Date.now();
    await expect(
      moderator({ model: 'omni-moderation-latest@latency=2000', timeoutMs: 100 }).check({ texts: ['x'], model: 'm' }),
    ).rejects.toThrow(/no answer within 100 ms/);
    expect(Date.now() - started).toBeLessThan(1500);
    await expect(
      moderator({ baseUrl: 'http://127.0.0.1:1/v1' }).check({ texts: ['x'], model: 'm' }),
    ).rejects.toBeInstanceOf(ModerationFailure);
  });

  it('stops waiting when the caller leaves', async () => {
    const controller = new AbortController();
    const pending = moderator({ model: 'omni-moderation-latest@latency=2000', timeoutMs: 5000 }).check({
      texts: ['x'],
      model: 'm',
      signal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toThrow(/caller went away/);
  });
});

describe('verdictOf', () => {
  it('refuses answers that are not moderation results', () => {
    expect(() => verdictOf('not json', ['x'])).toThrow(ModerationFailure);
    expect(() => verdictOf('{"results":[]}', ['x'])).toThrow(ModerationFailure);
    expect(() => verdictOf('{"results":[{"flagged":"yes"}]}', ['x'])).toThrow(ModerationFailure);
  });

  it('reports "flagged" when no category is given, and the joined input when results do not align', () => {
    expect(verdictOf('{"results":[{"flagged":true}]}', ['a'])).toEqual({
      flagged: true,
      reasons: ['flagged'],
      flaggedInput: 'a',
    });
    expect(verdictOf('{"results":[{"flagged":true,"categories":{"hate":true,"violence":null}}]}', ['a', 'b'])).toEqual({
      flagged: true,
      reasons: ['hate'],
      flaggedInput: 'a\nb',
    });
  });
});
