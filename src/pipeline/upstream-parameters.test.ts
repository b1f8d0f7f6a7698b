import { describe, expect, it } from 'vitest';
import type { CatalogEndpoint } from '../routing/catalog.js';
import { upstreamBodyFor } from './upstream-parameters.js';

const endpoint = (supportedParameters: string[]) => ({ supportedParameters }) as unknown as CatalogEndpoint;
const messages = [{ role: 'user', content: 'hi' }];

describe('upstreamBodyFor', () => {
  it('adds the budget in the field the endpoint takes when the caller named no limit', () => {
    expect(upstreamBodyFor({ messages }, endpoint(['max_tokens']), 300)).toEqual({ messages, max_tokens: 300 });
    expect(upstreamBodyFor({ messages }, endpoint(['max_completion_tokens']), 300)).toEqual({
      messages,
      max_completion_tokens: 300,
    });
    expect(upstreamBodyFor({ messages, max_tokens: null }, endpoint([]), 300)).toEqual({ messages, max_tokens: 300 });
  });

  it("caps the caller's own limit fields at the budget and keeps lower ones", () => {
    expect(upstreamBodyFor({ messages, max_tokens: 50, max_completion_tokens: 900 }, endpoint([]), 300)).toEqual({
      messages,
      max_tokens: 50,
      max_completion_tokens: 300,
    });
  });

  it('forwards listed extras but never routing or legacy fields, even when listed', () => {
    const body = upstreamBodyFor(
      { messages, reasoning_effort: 'low', provider: { only: ['x'] }, stream_options: {}, foo: 1 },
      endpoint(['reasoning_effort', 'provider', 'stream_options']),
      10,
    );
    expect(body).toEqual({ messages, reasoning_effort: 'low', max_tokens: 10 });
  });
});
