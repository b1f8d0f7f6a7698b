import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser.js';
import { formatSseData, SSE_DONE, SSE_PROCESSING_COMMENT } from './sse-writer.js';

describe('sse-writer', () => {
  it('writes one data line per payload, even when strings hold line breaks', () => {
    const payload = { content: 'line one\r\nline two\rthree\n\ndata: injected' };
    const text = formatSseData(payload);
    expect(text.startsWith('data: ')).toBe(true);
    expect(text.slice(0, -2)).not.toMatch(/[\r\n]/);
    const events = new SseParser().push(text);
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.data)).toEqual(payload);
  });

  it('writes the keep-alive and comments as SSE comments that parse as no event', () => {
    expect(SSE_PROCESSING_COMMENT).toBe(': TOLLGATE PROCESSING\n\n');
    const comments: string[] = [];
    const parser = new SseParser({ onComment: (c) => comments.push(c) });
    expect(parser.push(SSE_PROCESSING_COMMENT)).toEqual([]);
    expect(comments).toEqual(['TOLLGATE PROCESSING']);
  });

  it('ends a stream with [DONE]', () => {
    expect(new SseParser().push(SSE_DONE)).toEqual([{ event: null, data: '[DONE]', id: null }]);
  });
});
