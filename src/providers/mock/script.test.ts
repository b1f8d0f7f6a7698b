import { describe, expect, it } from 'vitest';
import { applyFailFirst, DEFAULT_MOCK_SCRIPT, parseHeaderScript, parseModelScript } from './script.js';

describe('mock script syntax', () => {
  it('reads parameters after "@" with short and long key spellings', () => {
    expect(parseModelScript('mock/fast@latency=200,tps=50,status=429,retry_after=2,behavior=reset')).toEqual({
      ok: true,
      script: { latencyMs: 200, tokensPerSecond: 50, status: 429, retryAfter: 2, behavior: 'reset' },
    });
    expect(parseModelScript('any-model@latencyMs=5,TTFT_MS=7,fail-first=1,usage=false')).toEqual({
      ok: true,
      script: { latencyMs: 5, ttftMs: 7, failFirst: 1, usage: false },
    });
  });

  it('reads parameters right after "mock/" without "@"', () => {
    expect(parseModelScript('mock/tokens=3,code=x,message=a%2Cb')).toEqual({
      ok: true,
      script: { completionTokens: 3, errorCode: 'x', errorMessage: 'a,b' },
    });
  });

  it('finds no script in plain model names', () => {
    expect(parseModelScript('gpt-4o-mini')).toEqual({ ok: true, script: {} });
    expect(parseModelScript('mock/default')).toEqual({ ok: true, script: {} });
  });

  it('rejects unknown keys, bad values and bad encodings', () => {
    expect(parseModelScript('m@latncy=1')).toMatchObject({
      ok: false,
      error: expect.stringContaining('latncy') as string,
    });
    expect(parseModelScript('m@tps=fast')).toMatchObject({ ok: false });
    expect(parseModelScript('m@status=')).toMatchObject({ ok: false });
    expect(parseModelScript('m@behavior=melt')).toMatchObject({ ok: false });
    expect(parseModelScript('m@content=%E0%A4%A')).toMatchObject({ ok: false });
    expect(parseModelScript('m@usage=yes')).toMatchObject({ ok: false });
  });

  it('reads the header as JSON with typed or string values, and null for nullable keys', () => {
    expect(parseHeaderScript('{"latencyMs":10,"tps":"20","content":null,"behavior":"stall","usage":true}')).toEqual({
      ok: true,
      script: { latencyMs: 10, tokensPerSecond: 20, content: null, behavior: 'stall', usage: true },
    });
    expect(parseHeaderScript('{"latencyMs":null}')).toMatchObject({ ok: false });
    expect(parseHeaderScript('[1]')).toMatchObject({ ok: false });
    expect(parseHeaderScript('{')).toMatchObject({ ok: false });
  });
});

describe('applyFailFirst', () => {
  const flaky = { ...DEFAULT_MOCK_SCRIPT, failFirst: 2, status: 503 };

  it('keeps the failure for the first N requests and clears it after', () => {
    expect(applyFailFirst(flaky, 0).status).toBe(503);
    expect(applyFailFirst(flaky, 1).status).toBe(503);
    expect(applyFailFirst(flaky, 2)).toMatchObject({ status: null, behavior: 'ok' });
  });

  it('fails with 500 when nothing failing was scripted, and leaves scripts without failFirst alone', () => {
    expect(applyFailFirst({ ...DEFAULT_MOCK_SCRIPT, failFirst: 1 }, 0).status).toBe(500);
    expect(applyFailFirst({ ...DEFAULT_MOCK_SCRIPT, failFirst: 1, behavior: 'drop' }, 0)).toMatchObject({
      status: null,
      behavior: 'drop',
    });
    const plain = { ...DEFAULT_MOCK_SCRIPT, status: 429 };
    expect(applyFailFirst(plain, 99)).toBe(plain);
  });
});
