import { describe, expect, it } from 'vitest';
import { SseLimitError, SseParser, type SseEvent } from './sse-parser.js';

const encoder = new TextEncoder();

function parseAll(chunks: (string | Uint8Array)[], parser = new SseParser()): SseEvent[] {
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...parser.push(chunk));
  events.push(...parser.end());
  return events;
}

function byteAtATime(text: string): Uint8Array[] {
  const bytes = encoder.encode(text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes.subarray(i, i + 1));
  return out;
}

const OPENAI_STREAM =
  'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n' +
  ': OPENROUTER PROCESSING\n\n' +
  'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Héllo 👋 世界"}}]}\n\n' +
  'data: [DONE]\n\n';

describe('SseParser', () => {
  it('parses a typical chat completion stream', () => {
    const events = parseAll([OPENAI_STREAM]);
    expect(events.map((e) => e.data)).toEqual([
      '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
      '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Héllo 👋 世界"}}]}',
      '[DONE]',
    ]);
    expect(events.every((e) => e.event === null && e.id === null)).toBe(true);
  });

  it('gives the same events when fed one byte at a time, including multibyte characters', () => {
    const whole = parseAll([encoder.encode(OPENAI_STREAM)]);
    const bytewise = parseAll(byteAtATime(OPENAI_STREAM));
    expect(bytewise).toEqual(whole);
    expect(bytewise[1]?.data).toContain('Héllo 👋 世界');
  });

  it('decodes a 4-byte character split across chunks', () => {
    const bytes = encoder.encode('data: 👋\n\n');
    // The emoji occupies bytes 6..9; split inside it twice.
    const events = parseAll([bytes.subarray(0, 7), bytes.subarray(7, 9), bytes.subarray(9)]);
    expect(events).toEqual([{ event: null, data: '👋', id: null }]);
  });

  it('replaces invalid UTF-8 as the WHATWG decoder does, whole or split byte by byte', () => {
    const invalid = [
      [0xff],
      [0xc3],
      [0xe2, 0x82],
      [0xf0, 0x9f, 0x91],
      [0xed, 0xa0, 0x80],
      [0xc0, 0xaf],
      [0xe2, 0x28, 0xa1],
    ];
    for (const bad of invalid) {
      const bytes = Uint8Array.from([...encoder.encode('data: a'), ...bad, ...encoder.encode('z\n\n')]);
      const expected = new TextDecoder('utf-8').decode(bytes).slice('data: '.length, -2);
      expect(expected).toContain('\ufffd');
      expect(parseAll([bytes])[0]?.data).toBe(expected);
      expect(parseAll([...bytes].map((b) => Uint8Array.of(b)))[0]?.data).toBe(expected);
    }
  });

  it('accepts LF, CRLF and CR line endings, mixed', () => {
    const events = parseAll(['data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r']);
    expect(events.map((e) => e.data)).toEqual(['a\nb\nc', 'd']);
  });

  it('treats CR at a chunk end followed by LF in the next chunk as one line break', () => {
    const events = parseAll(['data: a\r', '\ndata: b\r', '\n\r', '\n']);
    expect(events.map((e) => e.data)).toEqual(['a\nb']);
  });

  it('treats CR at a chunk end followed by anything else as a line break by itself', () => {
    const events = parseAll(['data: a\r', '\r', 'data: b\n\n']);
    expect(events.map((e) => e.data)).toEqual(['a', 'b']);
  });

  it('gives the same events for CRLF streams fed byte at a time', () => {
    const crlf = OPENAI_STREAM.replaceAll('\n', '\r\n');
    expect(parseAll(byteAtATime(crlf))).toEqual(parseAll([OPENAI_STREAM]));
  });

  it('joins multiple data lines with a newline and keeps empty data lines', () => {
    const events = parseAll(['data: one\ndata:\ndata:  two\n\n']);
    expect(events).toEqual([{ event: null, data: 'one\n\n two', id: null }]);
  });

  it('removes exactly one leading space after the colon', () => {
    expect(parseAll(['data:x\n\n', 'data:  x\n\n']).map((e) => e.data)).toEqual(['x', ' x']);
  });

  it('reads event, id and retry fields; the id persists across events', () => {
    const parser = new SseParser();
    const events = parseAll(['event: ping\nid: 7\nretry: 1500\ndata: {}\n\n', 'data: next\n\n'], parser);
    expect(events).toEqual([
      { event: 'ping', data: '{}', id: '7' },
      { event: null, data: 'next', id: '7' },
    ]);
    expect(parser.retryMs).toBe(1500);
  });

  it('ignores a retry value that is not all digits and an id containing NUL', () => {
    const parser = new SseParser();
    const events = parseAll(['retry: 10s\nid: a\0b\ndata: x\n\n'], parser);
    expect(parser.retryMs).toBeNull();
    expect(events[0]?.id).toBeNull();
  });

  it('does not dispatch an event without data lines', () => {
    expect(parseAll(['event: ping\n\n', 'id: 3\n\n', '\n\n\n'])).toEqual([]);
  });

  it('dispatches an event whose only data line is empty', () => {
    expect(parseAll(['data\n\n'])).toEqual([{ event: null, data: '', id: null }]);
  });

  it('ignores unknown fields and a field name without a colon', () => {
    expect(parseAll(['foo: bar\nbaz\ndata: ok\n\n']).map((e) => e.data)).toEqual(['ok']);
  });

  it('reports comments to onComment, and ignores them otherwise', () => {
    const comments: string[] = [];
    const parser = new SseParser({ onComment: (text) => comments.push(text) });
    const events = parseAll([': TOLLGATE PROCESSING\n', ':no-space\n', 'data: x\n\n'], parser);
    expect(comments).toEqual(['TOLLGATE PROCESSING', 'no-space']);
    expect(events.map((e) => e.data)).toEqual(['x']);
  });

  it('discards an unterminated final event, per spec', () => {
    expect(parseAll(['data: a\n\ndata: truncated'])).toEqual([{ event: null, data: 'a', id: null }]);
    expect(parseAll(['data: a\n\ndata: truncated\n'])).toHaveLength(1);
  });

  it('dispatches an unterminated final event when asked to', () => {
    const parser = new SseParser({ dispatchIncompleteAtEnd: true });
    expect(parseAll(['data: a\n\ndata: tail'], parser).map((e) => e.data)).toEqual(['a', 'tail']);
  });

  it('strips a byte-order mark at the start of the stream only', () => {
    const withBom = Uint8Array.from([0xef, 0xbb, 0xbf, ...encoder.encode('data: x\n\n')]);
    expect(parseAll([withBom]).map((e) => e.data)).toEqual(['x']);
    expect(parseAll(['\ufeffdata: y\n\n']).map((e) => e.data)).toEqual(['y']);
    expect(parseAll(['data: z\n\n', '\ufeffdata: w\n\n']).map((e) => e.data)).toEqual(['z']);
  });

  it('returns events as soon as their blank line arrives', () => {
    const parser = new SseParser();
    expect(parser.push('data: a\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ event: null, data: 'a', id: null }]);
    expect(parser.push('data: b\n\nda')).toHaveLength(1);
    expect(parser.push('ta: c\n\n')).toEqual([{ event: null, data: 'c', id: null }]);
  });

  it('stays linear on a very long line fed in many small chunks', () => {
    const parser = new SseParser();
    const piece = 'x'.repeat(64);
    const pieces = 40_000; // 2.5 MB in one data line
    const started = performance.now();
    parser.push('data: ');
    let early = 0;
    for (let i = 0; i < pieces; i++) early += parser.push(piece).length;
    const events = parser.push('\n\n');
    expect(early).toBe(0);
    expect(events[0]?.data.length).toBe(piece.length * pieces);
    // Generous bound: a quadratic rescan would take many seconds here.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('stays linear on one large chunk of many LF-terminated events', () => {
    const line = 'data: {"choices":[]}\n\n';
    const big = line.repeat(100_000);
    const started = performance.now();
    const events = parseAll([big]);
    expect(events).toHaveLength(100_000);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('refuses a line longer than its bound, whether it arrives whole or in pieces, instead of buffering it', () => {
    const whole = new SseParser({ maxLineLength: 100 });
    expect(() => whole.push(`data: ${'x'.repeat(200)}\n\n`)).toThrow(SseLimitError);
    const pieces = new SseParser({ maxLineLength: 100 });
    pieces.push('data: ');
    for (let i = 0; i < 9; i++) pieces.push('x'.repeat(10));
    expect(() => pieces.push('x'.repeat(10))).toThrow(SseLimitError);
    // Up to the bound is fine, and the count starts again with each line.
    const fits = new SseParser({ maxLineLength: 100 });
    for (let i = 0; i < 5; i++) expect(fits.push(`data: ${'y'.repeat(90)}\n\n`)).toHaveLength(1);
  });

  it('refuses an event whose data lines together exceed the bound', () => {
    const parser = new SseParser({ maxLineLength: 100 });
    expect(() => parser.push(`${'data: 0123456789\n'.repeat(20)}\n`)).toThrow(SseLimitError);
  });

  it('says when part of an event is in hand, and not for comments or blank lines', () => {
    const parser = new SseParser();
    expect(parser.midEvent).toBe(false);
    parser.push(': keep-alive\n\n');
    expect(parser.midEvent).toBe(false);
    parser.push(': a comment not ended yet');
    expect(parser.midEvent).toBe(false);
    parser.push('\n\nda');
    expect(parser.midEvent).toBe(true); // a field line under way
    parser.push('ta: {"a":1}\n');
    expect(parser.midEvent).toBe(true); // a data line waiting for its blank line
    expect(parser.push('\n')).toHaveLength(1);
    expect(parser.midEvent).toBe(false);
  });
});
