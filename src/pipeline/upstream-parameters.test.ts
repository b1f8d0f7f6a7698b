import { describe, expect, it } from 'vitest';
import { reasoningExcluded } from '../providers/openai-input.js';
import type { CatalogEndpoint } from '../routing/catalog.js';
import { upstreamBodyFor } from './upstream-parameters.js';

const endpoint = (supportedParameters: string[], kind = 'openai') =>
  ({ supportedParameters, provider: { kind } }) as unknown as CatalogEndpoint;
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

  it("sends the lowest of the caller's limits and the budget, capped, in the one field the endpoint lists", () => {
    const both = { messages, max_tokens: 50, max_completion_tokens: 900 };
    expect(upstreamBodyFor(both, endpoint([]), 300)).toEqual({ messages, max_tokens: 50, max_completion_tokens: 50 });
    expect(upstreamBodyFor({ messages, max_completion_tokens: 900 }, endpoint([]), 300)).toEqual({
      messages,
      max_completion_tokens: 300,
    });
    // OpenAI's reasoning models refuse `max_tokens`; a server that knows only `max_tokens` ignores the other.
    expect(upstreamBodyFor({ messages, max_tokens: 100 }, endpoint(['max_completion_tokens']), 300)).toEqual({
      messages,
      max_completion_tokens: 100,
    });
    expect(upstreamBodyFor({ messages, max_completion_tokens: 10 }, endpoint(['max_tokens']), 300)).toEqual({
      messages,
      max_tokens: 10,
    });
    expect(upstreamBodyFor(both, endpoint(['max_tokens', 'max_completion_tokens']), 30)).toEqual({
      messages,
      max_tokens: 30,
      max_completion_tokens: 30,
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

  it('sends a documented parameter only to an endpoint that lists it (OpenAI refuses what it does not know)', () => {
    const request = { messages, temperature: 0.2, top_k: 40, repetition_penalty: 1.1, logprobs: true, user: 'u' };
    expect(upstreamBodyFor(request, endpoint(['max_tokens', 'temperature']), 10)).toEqual({
      messages,
      temperature: 0.2,
      user: 'u',
      max_tokens: 10,
    });
    expect(upstreamBodyFor(request, endpoint(['top_k', 'logprobs'], 'anthropic'), 10)).toEqual({
      messages,
      top_k: 40,
      logprobs: true,
      user: 'u',
      max_tokens: 10,
    });
  });

  it('carries a reasoning choice over into the form an OpenAI-compatible endpoint lists', () => {
    const effort = { messages, reasoning: { effort: 'high' } };
    expect(upstreamBodyFor(effort, endpoint(['reasoning_effort']), 10)).toEqual({
      messages,
      reasoning_effort: 'high',
      max_tokens: 10,
    });
    expect(upstreamBodyFor(effort, endpoint(['reasoning']), 10)).toEqual({ ...effort, max_tokens: 10 });
    const legacy = upstreamBodyFor(
      { messages, reasoning_effort: 'low', include_reasoning: false },
      endpoint(['reasoning']),
      10,
    );
    expect(JSON.parse(JSON.stringify(legacy))).toEqual({
      messages,
      reasoning: { effort: 'low', exclude: true },
      max_tokens: 10,
    });
    expect(upstreamBodyFor({ messages, include_reasoning: true }, endpoint(['reasoning']), 10)).toEqual({
      messages,
      reasoning: { enabled: true },
      max_tokens: 10,
    });
    // Not taken at all: nothing of it is sent.
    expect(upstreamBodyFor(effort, endpoint(['max_tokens']), 10)).toEqual({ messages, max_tokens: 10 });
  });

  it('gives a translating adapter every reasoning form when the endpoint takes reasoning in any', () => {
    const request = { messages, reasoning_effort: 'medium', include_reasoning: true };
    expect(upstreamBodyFor(request, endpoint(['reasoning'], 'anthropic'), 10)).toEqual({ ...request, max_tokens: 10 });
    expect(upstreamBodyFor(request, endpoint(['max_tokens'], 'gemini'), 10)).toEqual({ messages, max_tokens: 10 });
  });

  it("marks the caller's exclusion of reasoning on the body, out of the JSON the provider gets", () => {
    const body = upstreamBodyFor({ messages, include_reasoning: false }, endpoint(['max_tokens']), 10);
    expect(reasoningExcluded(body)).toBe(true);
    expect(JSON.parse(JSON.stringify(body))).toEqual({ messages, max_tokens: 10 });
    expect(reasoningExcluded(upstreamBodyFor({ messages }, endpoint([]), 10))).toBe(false);
  });

  it('sends no tool fields for an empty tools list', () => {
    const request = { messages, tools: [], tool_choice: 'auto', parallel_tool_calls: false };
    expect(upstreamBodyFor(request, endpoint(['max_tokens', 'tools']), 10)).toEqual({ messages, max_tokens: 10 });
  });
});
