import { describe, expect, it } from 'vitest';
import { newGenerationId } from './ids.js';

describe('newGenerationId', () => {
  it('is gen-<unix seconds>-<20 base62>, never the same twice, drawing on the whole alphabet', () => {
    const ids = Array.from({ length: 5000 }, () => newGenerationId(1_700_000_000_999));
    for (const id of ids) expect(id).toMatch(/^gen-1700000000-[A-Za-z0-9]{20}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // 100,000 characters from 62 symbols: each appears ~1,600 times; a stuck or biased draw would show.
    const counts = new Map<string, number>();
    for (const id of ids) for (const c of id.slice(-20)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(n).toBeGreaterThan(1_200);
  });
});
