import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../providers/types.js';
import { CompletionAggregator, completionToEvents } from './stream-aggregate.js';

const chunk = (choices: unknown[], usage: unknown = null): Extract<StreamEvent, { kind: 'chunk' }> =>
  ({ kind: 'chunk', upstreamId: 'up-1', systemFingerprint: 'fp', choices, usage }) as Extract<
    StreamEvent,
    { kind: 'chunk' }
  >;
const delta = (d: Record<string, unknown>, finish: string | null = null) => ({
  index: 0,
  delta: d,
  finish_reason: finish,
  native_finish_reason: finish,
});

describe('CompletionAggregator', () => {
  it('folds text deltas, finish reason and usage into one completion', () => {
    const a = new CompletionAggregator();
    a.add(chunk([delta({ role: 'assistant', content: '' })]));
    a.add(chunk([delta({ content: 'Hel' })]));
    expect(a.finished).toBe(false);
    a.add(chunk([delta({ content: 'lo' }, 'stop')]));
    a.add(chunk([], { promptTokens: 3, completionTokens: 2, reasoningTokens: null, cachedTokens: null }));
    expect(a.finished).toBe(true);
    expect(a.result()).toEqual({
      upstreamId: 'up-1',
      systemFingerprint: 'fp',
      usage: { promptTokens: 3, completionTokens: 2, reasoningTokens: null, cachedTokens: null },
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello' },
          finish_reason: 'stop',
          native_finish_reason: 'stop',
        },
      ],
    });
  });

  it('assembles tool calls from fragments, by index', () => {
    const a = new CompletionAggregator();
    a.add(
      chunk([
        delta({
          role: 'assistant',
          content: '', // as OpenAI's and our decoders' role chunks carry it
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_', arguments: '{"ci' } }],
        }),
      ]),
    );
    a.add(
      chunk([
        delta({
          tool_calls: [
            { index: 0, function: { name: 'weather', arguments: 'ty":"Oslo"}' } },
            { index: 1, id: 'call_b', function: { name: 'now', arguments: '{}' } },
          ],
        }),
      ]),
    );
    a.add(chunk([delta({}, 'tool_calls')]));
    const message = a.result().choices[0]!.message;
    expect(message.content).toBeNull();
    expect(message.tool_calls).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_b', type: 'function', function: { name: 'now', arguments: '{}' } },
    ]);
  });

  it('round-trips a completion through completionToEvents', () => {
    const completion = {
      upstreamId: 'x',
      systemFingerprint: null,
      usage: { promptTokens: 1, completionTokens: 1, reasoningTokens: null, cachedTokens: null },
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'hi' },
          finish_reason: 'stop',
          native_finish_reason: 'stop',
        },
      ],
    };
    const events = completionToEvents(completion);
    expect(events.at(-1)).toEqual({ kind: 'done' });
    const a = new CompletionAggregator();
    for (const e of events) if (e.kind === 'chunk') a.add(e);
    expect(a.result()).toEqual(completion);
  });
});
