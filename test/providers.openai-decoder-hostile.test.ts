import { describe, expect, it } from 'vitest';
import { OpenAiStreamDecoder } from '../src/providers/openai/stream-decoder.js';
import { parseOpenAiStreamEvent } from '../src/providers/openai/parse-stream-event.js';

const HEAD =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":';
const TAIL = '},"logprobs":null,"finish_reason":null}]';
const ev = (lit: string, rest = ',"usage":null}') => HEAD + lit + TAIL + rest;

const HOSTILE_LITERALS = [
  '"a"',
  '"\\""',
  '"]"',
  '"\\\\"',
  '"\\\\\\""',
  '"\\u0022"',
  '"\\ud800"',
  '"\\udc00\\ud800"',
  '"\\u2028"',
  '"\u2028"',
  '"\\/"',
  '"\\b\\f\\n\\r\\t"',
  '"\\x"',
  '"\\u12"',
  '"\t"',
  '"a\\"',
  '"\\u005c"',
  '""',
  '"\\u0000tollgate-probe\\u0000"',
  '"a","content":"b"',
  '"a"}}],"choices":[]',
  'null',
  '1',
  '"a"  ',
  '"\\uD83D\\uDE00"',
];
const RESTS = [
  '}',
  ',"usage":null}',
  ',"usage":null,"obfuscation":"abc"}',
  ',"obfuscation":"x\\"y"}',
  ',"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}',
  ',"usage":{"prompt_tokens":3},"usage":null}',
  ',"usage":null,"usage":{"completion_tokens":2}}',
  ',"error":{"message":"boom"}}',
  ',"error":null}',
  ',"choices":[]}',
  ',"id":"other"}',
  ',"system_fingerprint":"fp2"}',
  ',"system_fingerprint":null}',
  ',}',
  ',"usage":null}}',
  ' }',
  '} ',
  ',"__proto__":{"usage":{"prompt_tokens":1}}}',
  ',"usage":null,"model":"x","object":"y","created":2}',
  ',"service_tier":"default","usage":null}',
  ',"choices":null}',
];
const LEARN = [
  ev('"hello"'),
  ev('"hello"', '}'),
  '{"choices":[{"delta":{"content":"hi"},"index":1}],"id":"z"}',
  '{"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null},{"index":1,"delta":{"content":"yo"},"finish_reason":null}]}',
];

/** Hostile event texts: the template path gives what the full parser gives. */
describe('template decoder vs full parser on hostile events', () => {
  it('agrees on every variant after learning', () => {
    const mismatches: string[] = [];
    let templated = 0;
    for (const learn of LEARN)
      for (const lit of HOSTILE_LITERALS)
        for (const rest of RESTS) {
          const decoder = new OpenAiStreamDecoder();
          decoder.parseStreamEvent(learn, null);
          decoder.parseStreamEvent(learn.replace('"hello"', '"again"'), null);
          const base = learn.startsWith(HEAD) ? HEAD : null;
          const data = base ? ev(lit, rest) : learn.replace('"hi"', lit).replace(/\}$/, rest);
          const before = decoder.templated;
          const got = decoder.parseStreamEvent(data, null);
          templated += decoder.templated - before;
          const want = parseOpenAiStreamEvent(data, null);
          try {
            expect(got).toEqual(want);
          } catch {
            mismatches.push(`${data}\n got ${JSON.stringify(got)}\n want ${JSON.stringify(want)}`);
          }
        }
    expect(templated).toBeGreaterThan(100); // the template path was really taken
    expect(mismatches).toEqual([]);
  });
});
