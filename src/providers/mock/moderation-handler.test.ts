import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockProvider, type MockProvider } from '../mock-server.js';
import { MODERATION_CATEGORIES } from './moderation-handler.js';

let provider: MockProvider;
beforeAll(async () => {
  provider = await startMockProvider();
});
afterAll(() => provider.close());

async function moderate(body: unknown, headers: Record<string, string> = { authorization: 'Bearer test' }) {
  const response = await request(`${provider.url}/moderations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, json: (await response.body.json()) as any };
}

describe('mock provider POST /v1/moderations', () => {
  it('answers one result per input in the OpenAI shape; a mock-flag:<category> marker flags that category', async () => {
    provider.reset();
    const { status, json } = await moderate({
      model: 'omni-moderation-latest',
      input: ['hello', 'please mock-flag:violence and mock-flag:hate/threatening'],
    });
    expect(status).toBe(200);
    expect(json.id).toMatch(/^modr-/);
    expect(json.model).toBe('omni-moderation-latest');
    expect(json.results).toHaveLength(2);
    const [clean, flagged] = json.results;
    expect(clean.flagged).toBe(false);
    expect(Object.keys(clean.categories).sort()).toEqual([...MODERATION_CATEGORIES].sort());
    expect(Object.values(clean.categories).every((v) => v === false)).toBe(true);
    expect(flagged.flagged).toBe(true);
    expect(
      Object.entries(flagged.categories)
        .filter(([, v]) => v)
        .map(([k]) => k)
        .sort(),
    ).toEqual(['hate/threatening', 'violence']);
    expect(flagged.category_scores.violence).toBeGreaterThan(0.5);
    expect(provider.stats.moderations).toBe(1);
    expect(provider.stats.requests).toBe(0);
  });

  it('takes a single string, and a multi-part input as one input', async () => {
    expect((await moderate({ input: 'mock-flag:sexual' })).json.results.map((r: any) => r.flagged)).toEqual([true]);
    const parts = await moderate({
      input: [
        { type: 'text', text: 'fine' },
        { type: 'text', text: 'mock-flag:illicit' },
      ],
    });
    expect(parts.json.results.map((r: any) => r.flagged)).toEqual([true]);
  });

  it('refuses a missing API key (401), a bad input (400), and answers a scripted status', async () => {
    expect((await moderate({ input: 'x' }, {})).status).toBe(401);
    expect((await moderate({ input: 42 })).status).toBe(400);
    const failed = await moderate({ model: 'omni-moderation-latest@status=503', input: 'x' });
    expect(failed.status).toBe(503);
    expect(failed.json.error).toBeDefined();
    const wrongMethod = await request(`${provider.url}/moderations`);
    expect(wrongMethod.statusCode).toBe(405);
    await wrongMethod.body.dump();
  });
});
