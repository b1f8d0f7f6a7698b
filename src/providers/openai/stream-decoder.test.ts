import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseOpenAiStreamEvent } from './parse-stream-event.js';
import { OpenAiStreamDecoder } from './stream-decoder.js';

const text = fc.string({ unit: 'binary', maxLength: 12 });

/** A JSON string literal as some servers write it: every character as a \\u escape. */
function escapedLiteral(value: string): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) out += `\\u${value.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return `${out}"`;
}

const literal = fc.oneof(
  text.map((value) => JSON.stringify(value)),
  text.map(escapedLiteral),
  // Raw text between quotes: often not a valid literal (a quote, a control character, a lone backslash).
  text.map((value) => `"${value}"`),
);

const trailer = fc.oneof(
  fc.constantFrom(
    '}',
    ',"usage":null}',
    ',"usage":null,"obfuscation":"xY3"}',
    ',"usage":{"prompt_tokens":3,"completion_tokens":2}}',
    ',"error":{"message":"overloaded"}}',
    ',"error":null}',
    ',"id":"other"}',
    ',"system_fingerprint":7}',
    ',"choices":[]}',
    ',}',
    ', }',
    '} ',
    ',"usage":null',
  ),
  text.map((value) => `,"obfuscation":${JSON.stringify(value)}}`),
  text.map((value) => value),
);

const choiceTail = fc.constantFrom(
  '},"logprobs":null,"finish_reason":null}]',
  '},"finish_reason":null}]',
  '}}]',
  '},"finish_reason":"stop"}]',
  '},"logprobs":{"content":[]},"finish_reason":null}]',
  '},"x":"]}"}]',
  '}},{"index":1,"delta":{"content":"b"}}]',
  ',"content":"again"}}]',
);

const identity = fc.record({
  id: text,
  model: text,
  fingerprint: fc.option(text),
  extra: fc.constantFrom(
    '',
    '"service_tier":"default",',
    '"usage":null,',
    '"usage":{"prompt_tokens":1,"completion_tokens":1},',
    '"error":null,',
    '"choices":[],',
  ),
  shape: fc.record({
    index: fc.constantFrom('0', '0', '1', '"0"'),
    delta: fc.constantFrom('{"content":', '{"content":', '{"role":"assistant","content":', '{ "content":'),
    choiceTail: fc.oneof({ weight: 3, arbitrary: fc.constant('},"logprobs":null,"finish_reason":null}]') }, choiceTail),
    trailer: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('}', ',"usage":null}') }, trailer),
  }),
});
type Identity = typeof identity extends fc.Arbitrary<infer T> ? T : never;

/** A value for one event in eight, null (the stream's own) otherwise. */
function rarely<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });
}

const event = fc.record({
  kind: fc.constantFrom(
    'content',
    'content',
    'content',
    'content',
    'content',
    'role',
    'finish',
    'usage',
    'done',
    'garbage',
  ),
  literal,
  /** This event's own shape instead of its stream's, now and then. */
  shape: rarely(identity.map((who) => who.shape)),
  trailer: rarely(trailer),
  garbage: text,
  mutation: rarely(
    fc.tuple(fc.nat(), fc.constantFrom('cut', 'insert'), fc.constantFrom('"', '\\', '}', ']', ',', 'x')),
  ),
  name: fc.constantFrom(null, null, null, 'error', 'message'),
});

function head(who: Identity): string {
  const fingerprint = who.fingerprint === null ? '' : `"system_fingerprint":${JSON.stringify(who.fingerprint)},`;
  return `{"id":${JSON.stringify(who.id)},"object":"chat.completion.chunk","created":1,"model":${JSON.stringify(who.model)},${fingerprint}${who.extra}"choices":`;
}

function render(who: Identity, e: typeof event extends fc.Arbitrary<infer T> ? T : never): string {
  let data: string;
  switch (e.kind) {
    case 'content': {
      const shape = e.shape ?? who.shape;
      const trailer = e.trailer ?? shape.trailer;
      data = `${head(who)}[{"index":${shape.index},"delta":${shape.delta}${e.literal}${shape.choiceTail}${trailer}`;
      break;
    }
    case 'role':
      data = `${head(who)}[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]${e.trailer ?? '}'}`;
      break;
    case 'finish':
      data = `${head(who)}[{"index":0,"delta":{},"finish_reason":"stop"}]${e.trailer ?? '}'}`;
      break;
    case 'usage':
      data = `${head(who)}[],"usage":{"prompt_tokens":5,"completion_tokens":9}}`;
      break;
    case 'done':
      return '[DONE]';
    default:
      return e.garbage;
  }
  if (e.mutation === null) return data;
  const [position, how, char] = e.mutation;
  const at = position % (data.length + 1);
  return how === 'cut' ? data.slice(0, at) : data.slice(0, at) + char + data.slice(at);
}

describe('OpenAiStreamDecoder', () => {
  it('decodes every event exactly as the full parser does, templated or not', () => {
    let templated = 0;
    fc.assert(
      fc.property(
        fc.array(identity, { minLength: 1, maxLength: 2 }),
        fc.array(fc.tuple(fc.nat({ max: 7 }), event), { minLength: 4, maxLength: 24 }),
        (identities, events) => {
          const decoder = new OpenAiStreamDecoder();
          for (const [which, e] of events) {
            const data = render(identities[which === 7 ? 1 % identities.length : 0]!, e);
            expect(decoder.parseStreamEvent(data, e.name)).toEqual(parseOpenAiStreamEvent(data, e.name));
          }
          templated += decoder.templated;
        },
      ),
      { numRuns: 3000 },
    );
    // The property is about the template path: it must be taken often (about one event per run on average).
    expect(templated).toBeGreaterThan(1500);
  });

  it('reads a recorded OpenAI stream through its template after the first content event', () => {
    const decoder = new OpenAiStreamDecoder();
    const id = '"id":"chatcmpl-CAr6H1dNlQXk5Jm0cYz3xqzWbT2ld","object":"chat.completion.chunk","created":1756645349';
    const fixed = `{${id},"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":`;
    const lines = [
      `${fixed}[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Qk"}`,
      ...['Hello', '! How', ' can I "help"', ' \\ you', ' today?'].map(
        (piece, i) =>
          `${fixed}[{"index":0,"delta":{"content":${JSON.stringify(piece)}},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"${'x'.repeat(i)}"}`,
      ),
      `${fixed}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"z"}`,
      `${fixed}[],"usage":{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15}}`,
      '[DONE]',
    ];
    for (const line of lines) expect(decoder.parseStreamEvent(line, null)).toEqual(parseOpenAiStreamEvent(line, null));
    expect(decoder.templated).toBe(4);
  });

  it('does not learn a slot from an event whose own content is the probe string', () => {
    // The first `"content":"` after `choices` is another field's (x), and the delta's content, later
    // in the fixed text, is the decoder's probe: substituting the probe into x's slot would look
    // like the content slot, and later events would report x as their content.
    const probe = JSON.stringify('\u0000tollgate-probe\u0000');
    const event = (x: string) =>
      `{"id":"a","choices":[{"index":0,"x":{"content":${x}},"delta":{"content":${probe}},"finish_reason":null}]}`;
    const decoder = new OpenAiStreamDecoder();
    for (const data of [event('"A"'), event('"B"'), event('"C"')])
      expect(decoder.parseStreamEvent(data, null)).toEqual(parseOpenAiStreamEvent(data, null));
  });

  it('does not learn from an event whose later members replace the choices it was learnt from', () => {
    // Found in review: the fixed text carries the probe as the delta's content, the slot is x's,
    // and a second `choices` member (the last one wins) gives the learning event another content.
    const probe = JSON.stringify('\u0000tollgate-probe\u0000');
    const fixed = (x: string) => `{"id":"a","choices":[{"index":0,"x":{"content":${x}},"delta":{"content":${probe}}}]`;
    const decoder = new OpenAiStreamDecoder();
    for (const data of [`${fixed('"A"')},"choices":[{"index":0,"delta":{"content":"Q"}}]}`, `${fixed('"B"')}}`])
      expect(decoder.parseStreamEvent(data, null)).toEqual(parseOpenAiStreamEvent(data, null));
  });

  it('never reads an event with logprobs through a template (they would be lost)', () => {
    // Found in review: logprobs were dropped everywhere; a template learnt from an event whose fixed
    // text holds them would drop them again for every later event with the same ones.
    const event = (content: string, logprobs: string) =>
      `{"id":"a","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":${logprobs},"finish_reason":null}]}`;
    const same = '{"content":[{"token":"a","logprob":-1,"bytes":[97],"top_logprobs":[]}],"refusal":null}';
    const decoder = new OpenAiStreamDecoder();
    for (const data of [event('a', same), event('b', same), event('c', same), event('d', 'null'), event('e', same)]) {
      const decoded = decoder.parseStreamEvent(data, null);
      expect(decoded).toEqual(parseOpenAiStreamEvent(data, null));
      if (!data.includes('"logprobs":null'))
        expect(decoded).toMatchObject({ choices: [{ logprobs: JSON.parse(same) }] });
    }
    expect(decoder.templated).toBe(0);
  });

  it('parses long events whole', () => {
    const decoder = new OpenAiStreamDecoder();
    const event = (content: string) =>
      `{"id":"a","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}`;
    for (const content of ['a', 'b', 'x'.repeat(5000), 'c'])
      expect(decoder.parseStreamEvent(event(content), null)).toEqual(parseOpenAiStreamEvent(event(content), null));
    expect(decoder.templated).toBe(2);
  });
});
