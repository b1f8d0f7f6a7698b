import { describe, expect, it } from 'vitest';
import { decodeRecords, encodeRecord, type JournalRecord } from './journal-codec.js';
import type { Settlement } from '../store/types.js';

function settlement(id: string, cost: bigint): Settlement {
  return {
    generation: {
      id,
      accountId: 'acct',
      keyHash: 'k'.repeat(64),
      createdAt: 1,
      model: 'm',
      providerName: 'p',
      totalCost: cost,
      upstreamPromptCost: cost,
      upstreamCompletionCost: 0n,
      isByok: false,
      streamed: true,
      cancelled: false,
      finishReason: null,
      nativeFinishReason: null,
      tokensPrompt: 1,
      tokensCompletion: 2,
      tokensReasoning: null,
      tokensCached: null,
      usageEstimated: false,
      latencyMs: null,
      generationTimeMs: null,
      upstreamId: null,
      appTitle: null,
      httpReferer: null,
      userAgent: null,
      externalUser: null,
      providerResponses: [],
    },
    periods: { day: 'd:2026-11-23', week: 'w:2026-11-23', month: 'm:2026-11' },
  };
}

describe('journal record framing', () => {
  const records: JournalRecord[] = [
    { t: 'charge', s: settlement('gen-1', 123_456_789_012_345_678n), at: 5 },
    { t: 'checkpoint', s: settlement('gen-2', 7n), at: 6 },
    { t: 'done', ids: ['gen-1'] },
  ];
  const encoded = Buffer.concat(records.map(encodeRecord));

  it('round-trips records, bigints exact', () => {
    const decoded = decodeRecords(encoded);
    expect(decoded.tail).toBeNull();
    expect(decoded.validBytes).toBe(encoded.length);
    expect(decoded.records).toEqual(records);
    expect((decoded.records[0] as { s: Settlement }).s.generation.totalCost).toBe(123_456_789_012_345_678n);
  });

  it('keeps the BYOK part of a continued stream (byokListCost), exact', () => {
    const mixed = settlement('gen-3', 900n);
    mixed.generation.isByok = true;
    mixed.generation.byokListCost = 400n;
    const record: JournalRecord = { t: 'charge', s: mixed, at: 7 };
    const decoded = decodeRecords(encodeRecord(record));
    expect(decoded.records).toEqual([record]);
    expect((decoded.records[0] as { s: Settlement }).s.generation.byokListCost).toBe(400n);
  });

  it('a record cut at any byte (crash mid-write) is ignored, and everything before it kept', () => {
    const lastStart = encodeRecord(records[0]!).length + encodeRecord(records[1]!).length;
    for (let cut = lastStart; cut < encoded.length; cut++) {
      const decoded = decodeRecords(encoded.subarray(0, cut));
      expect(decoded.records).toEqual(records.slice(0, 2));
      expect(decoded.validBytes).toBe(lastStart);
      expect(decoded.tail === 'truncated' || (cut === lastStart && decoded.tail === null)).toBe(true);
    }
  });

  it('a damaged byte fails the checksum: that record and the rest are ignored', () => {
    const damaged = Buffer.from(encoded);
    const secondStart = encodeRecord(records[0]!).length;
    damaged.writeUInt8(damaged.readUInt8(secondStart + 20) ^ 0xff, secondStart + 20);
    const decoded = decodeRecords(damaged);
    expect(decoded.records).toEqual(records.slice(0, 1));
    expect(decoded.tail).toBe('checksum');
    expect(decoded.validBytes).toBe(secondStart);
  });

  it('an absurd length (garbage header) is not trusted', () => {
    const garbage = Buffer.concat([
      encodeRecord(records[0]!),
      Buffer.from([0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 1, 2, 3]),
    ]);
    const decoded = decodeRecords(garbage);
    expect(decoded.records).toHaveLength(1);
    expect(decoded.tail).toBe('invalid');
  });
});

describe('journal record encoding', () => {
  const payloadOf = (record: JournalRecord) => encodeRecord(record).subarray(8).toString('utf8');
  const slow = (record: JournalRecord) =>
    JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? { $big: value.toString() } : value));

  it('writes the same text as the generic bigint replacer', () => {
    const record: JournalRecord = { t: 'charge', s: settlement('gen-9', -42n), at: 7 };
    expect(payloadOf(record)).toBe(slow(record));
  });

  it('encodes a bigint outside the money fields too (the generic way), and decodes it exact', () => {
    const s = settlement('gen-10', 3n);
    const record = { t: 'charge', s: { ...s, generation: { ...s.generation, extra: 9_007_199_254_740_993n } }, at: 8 };
    const encoded = encodeRecord(record as unknown as JournalRecord);
    expect(encoded.subarray(8).toString('utf8')).toBe(slow(record as unknown as JournalRecord));
    const decoded = decodeRecords(encoded).records[0] as unknown as typeof record;
    expect(decoded.s.generation.extra).toBe(9_007_199_254_740_993n);
  });
});
