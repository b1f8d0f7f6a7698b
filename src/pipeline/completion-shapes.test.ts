import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChunkChoice } from '../providers/types.js';
import { chunkHead, chunkJson, renderChunk } from './completion-shapes.js';

// Full Unicode, lone surrogates included: JSON.stringify escapes those, and both paths must agree.
const text = fc.string({ unit: 'binary' });
const identity = fc.record({ id: text, created: fc.integer(), model: text, provider: text });
const choice: fc.Arbitrary<ChunkChoice> = fc.record({
  index: fc.oneof(fc.nat(), fc.double()),
  delta: fc.dictionary(text, fc.jsonValue()),
  finish_reason: fc.option(text, { nil: null }),
  native_finish_reason: fc.option(text, { nil: null }),
});

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
});
