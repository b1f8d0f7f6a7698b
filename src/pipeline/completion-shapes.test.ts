import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChunkChoice } from '../providers/types.js';
import { chunkHead, chunkJson, renderChunk, renderCompletion } from './completion-shapes.js';
import type { Charge } from './generation.js';

// Full Unicode, lone surrogates included: JSON.stringify escapes those, and both paths must agree.
const text = fc.string({ unit: 'binary' });
const identity = fc.record({ id: text, created: fc.integer(), model: text, provider: text });
const tokenLogprob = fc.record({
  token: text,
  logprob: fc.double({ noNaN: true, noDefaultInfinity: true }),
  bytes: fc.option(fc.array(fc.nat({ max: 255 }), { maxLength: 4 }), { nil: null }),
  top_logprobs: fc.array(fc.record({ token: text, logprob: fc.double() }), { maxLength: 2 }),
});
const choice: fc.Arbitrary<ChunkChoice> = fc.record(
  {
    index: fc.oneof(fc.nat(), fc.double()),
    delta: fc.dictionary(text, fc.jsonValue()),
    finish_reason: fc.option(text, { nil: null }),
    native_finish_reason: fc.option(text, { nil: null }),
    logprobs: fc.oneof(
      fc.record({
        content: fc.option(fc.array(tokenLogprob, { maxLength: 3 }), { nil: null }),
        refusal: fc.option(fc.array(tokenLogprob, { maxLength: 2 }), { nil: null }),
      }),
      fc.dictionary(text, fc.jsonValue()),
    ),
  },
  { requiredKeys: ['index', 'delta', 'finish_reason', 'native_finish_reason'] },
);

describe('chunkJson (a stream chunk serialised from its cached head)', () => {
  it('is exactly JSON.stringify of renderChunk, for any identity, fingerprint and choices', () => {
    fc.assert(
      fc.property(identity, fc.option(text, { nil: null }), fc.array(choice, { maxLength: 4 }), (id, fp, choices) => {
        const json = chunkJson(chunkHead(id, fp), choices);
        expect(json).toBe(JSON.stringify(renderChunk(id, choices, fp)));
        expect(json).not.toMatch(/[\r\n]/); // one SSE data line
      }),
      { numRuns: 2_000 },
    );
  });

  it('renders a typical content chunk the way clients read it', () => {
    const json = chunkJson(chunkHead({ id: 'gen-1', created: 1700000000, model: 'm/x', provider: 'P' }, 'fp_1'), [
      { index: 0, delta: { content: 'Hi "there"\n' }, finish_reason: null, native_finish_reason: null },
    ]);
    expect(JSON.parse(json)).toEqual({
      id: 'gen-1',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'm/x',
      provider: 'P',
      system_fingerprint: 'fp_1',
      choices: [
        {
          index: 0,
          delta: { content: 'Hi "there"\n' },
          finish_reason: null,
          native_finish_reason: null,
          logprobs: null,
        },
      ],
    });
  });

  it('carries the provider logprobs of a chunk, and null when it sent none', () => {
    const logprobs = { content: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    const head = chunkHead({ id: 'gen-1', created: 1, model: 'm/x', provider: 'P' }, null);
    const json = chunkJson(head, [
      { index: 0, delta: { content: 'Hi' }, finish_reason: null, native_finish_reason: null, logprobs },
      { index: 1, delta: { content: 'Yo' }, finish_reason: null, native_finish_reason: null },
    ]);
    expect(JSON.parse(json).choices.map((c: { logprobs: unknown }) => c.logprobs)).toEqual([logprobs, null]);
  });
});

describe('renderCompletion', () => {
  const identity = { id: 'gen-1', created: 1, model: 'm/x', provider: 'P' };
  const charge = {
    promptTokens: 1,
    completionTokens: 1,
    record: {
      totalCost: 0n,
      isByok: false,
      tokensCached: null,
      tokensReasoning: null,
      upstreamPromptCost: 0n,
      upstreamCompletionCost: 0n,
    },
  } as unknown as Charge;

  it('carries each choice’s logprobs, null when the provider gave none', () => {
    const logprobs = { content: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    const message = { role: 'assistant', content: 'Hi' };
    const body = renderCompletion(
      identity,
      [
        { index: 0, message, finish_reason: 'stop', native_finish_reason: 'stop', logprobs },
        { index: 1, message, finish_reason: 'stop', native_finish_reason: 'stop' },
      ],
      null,
      charge,
    );
    expect(body.choices.map((c) => c.logprobs)).toEqual([logprobs, null]);
  });
});
