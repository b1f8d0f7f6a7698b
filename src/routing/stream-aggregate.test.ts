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

  it('a refusal alone has content null, as OpenAI answers it; an empty answer keeps ""', () => {
    const refused = new CompletionAggregator();
    refused.add(chunk([delta({ role: 'assistant', content: '' })]));
    refused.add(chunk([delta({ refusal: "I can't help" })]));
    refused.add(chunk([delta({ refusal: ' with that.' }, 'stop')]));
    expect(refused.result().choices[0]!.message).toEqual({
      role: 'assistant',
      content: null,
      refusal: "I can't help with that.",
    });
    const empty = new CompletionAggregator();
    empty.add(chunk([delta({ role: 'assistant', content: '' }, 'stop')]));
    expect(empty.result().choices[0]!.message).toEqual({ role: 'assistant', content: '' });
  });

  it('keeps a tool name that the upstream repeats on every fragment once', () => {
    // Found from outside (MiniMax through NIM, Fireworks): the name came back glued, get_weatherget_weather…,
    // and the AI SDK's tool loop failed on it.
    const a = new CompletionAggregator();
    for (const args of ['{"ci', 'ty":', '"Oslo"}'])
      a.add(
        chunk([
          delta({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'get_weather', arguments: args } }] }),
        ]),
      );
    a.add(chunk([delta({}, 'tool_calls')]));
    expect(a.result().choices[0]!.message.tool_calls).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    ]);
  });

  it('keeps the list fields of the deltas in the message, concatenated in order, and only those sent', () => {
    // Found in review: the fold kept only content, reasoning, refusal and tool_calls, so a non-streamed
    // answer lost the reasoning_details and annotations its streamed twin carries.
    const details = [
      { type: 'reasoning.text', text: 'Think', index: 0 },
      { type: 'reasoning.text', text: 'ing.', signature: 'sig', index: 0 },
    ];
    const citation = {
      type: 'url_citation',
      url_citation: { url: 'https://example.test', start_index: 0, end_index: 2 },
    };
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } };
    const a = new CompletionAggregator();
    a.add(chunk([delta({ role: 'assistant', content: '' })]));
    a.add(chunk([delta({ reasoning: 'Think', reasoning_details: [details[0]] })]));
    a.add(chunk([delta({ reasoning: 'ing.', reasoning_details: [details[1]] })]));
    a.add(chunk([delta({ content: 'Hi' })]));
    a.add(chunk([delta({ annotations: [citation], images: [image] })]));
    a.add(chunk([delta({}, 'stop')]));
    expect(a.result().choices[0]!.message).toEqual({
      role: 'assistant',
      content: 'Hi',
      reasoning: 'Thinking.',
      reasoning_details: [{ type: 'reasoning.text', text: 'Thinking.', index: 0, signature: 'sig' }],
      annotations: [citation],
      images: [image],
    });

    const plain = new CompletionAggregator();
    plain.add(chunk([delta({ content: 'Hi' }, 'stop')]));
    expect(Object.keys(plain.result().choices[0]!.message)).toEqual(['role', 'content']);
  });

  it('merges the streamed fragments of a reasoning block into one detail, as the whole answer carries it', () => {
    // Found in review: each streamed fragment stayed a detail of its own, so a client sending the
    // details back on the next turn sent one block per token, only the last one signed.
    const a = new CompletionAggregator();
    const details = (...items: unknown[]) => a.add(chunk([delta({ reasoning_details: items })]));
    details({ type: 'reasoning.text', text: 'Let me ', format: 'anthropic-claude-v1', index: 0 });
    details(
      { type: 'reasoning.text', text: 'think.', index: 0 },
      { type: 'reasoning.text', signature: 'sig-1', index: 0 },
    );
    details({ type: 'reasoning.encrypted', data: 'opaque', index: 1 });
    details({ type: 'reasoning.text', text: 'Again', index: 2 });
    details(
      { type: 'reasoning.summary', summary: 'In ', index: 3 },
      { type: 'reasoning.summary', summary: 'short', index: 3 },
    );
    details({ type: 'reasoning.summary', summary: 'Another', index: 4 });
    details({ type: 'something.new', text: 'kept', index: 4 }, { type: 'something.new', text: 'as is', index: 4 });
    a.add(chunk([delta({ content: 'Hi' }, 'stop')]));
    expect(a.result().choices[0]!.message.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'Let me think.', format: 'anthropic-claude-v1', index: 0, signature: 'sig-1' },
      { type: 'reasoning.encrypted', data: 'opaque', index: 1 },
      { type: 'reasoning.text', text: 'Again', index: 2 },
      { type: 'reasoning.summary', summary: 'In short', index: 3 },
      { type: 'reasoning.summary', summary: 'Another', index: 4 },
      { type: 'something.new', text: 'kept', index: 4 },
      { type: 'something.new', text: 'as is', index: 4 },
    ]);
  });

  it('folds the chunks’ logprobs into one object per choice, null sides and all', () => {
    const token = (t: string) => ({ token: t, logprob: -0.5, bytes: [...Buffer.from(t)], top_logprobs: [] });
    const withLogprobs = (d: Record<string, unknown>, logprobs: unknown, index = 0) => ({
      ...delta(d),
      index,
      logprobs,
    });
    const a = new CompletionAggregator();
    a.add(chunk([withLogprobs({ content: 'Hel' }, { content: [token('Hel')], refusal: null })]));
    a.add(chunk([withLogprobs({ content: 'lo' }, { content: [token('lo')], refusal: null })]));
    a.add(chunk([delta({ content: '!' })])); // a chunk without any: nothing added
    a.add(chunk([withLogprobs({ content: 'x' }, { content: [token('x')] }, 1)]));
    a.add(chunk([{ ...delta({}, 'stop') }, { ...delta({}, 'stop'), index: 1 }]));
    a.add(chunk([{ ...delta({}, 'stop'), index: 2 }]));
    const [first, second, third] = a.result().choices;
    expect(first!.logprobs).toEqual({ content: [token('Hel'), token('lo')], refusal: null });
    expect(second!.logprobs).toEqual({ content: [token('x')], refusal: null });
    expect(third).not.toHaveProperty('logprobs');
  });

  it('round-trips a completion through completionToEvents', () => {
    const completion = {
      upstreamId: 'x',
      systemFingerprint: null,
      usage: { promptTokens: 1, completionTokens: 1, reasoningTokens: null, cachedTokens: null },
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'hi',
            reasoning_details: [{ type: 'reasoning.text', text: 'hm' }],
            annotations: [{ type: 'url_citation' }],
          },
          finish_reason: 'stop',
          native_finish_reason: 'stop',
          logprobs: { content: [{ token: 'hi', logprob: -1, bytes: [104, 105], top_logprobs: [] }], refusal: null },
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
