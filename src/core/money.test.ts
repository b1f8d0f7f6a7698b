import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  computeCost,
  formatPricePerToken,
  formatUnitsUsd,
  isZeroPrice,
  parsePricePerToken,
  worstPromptPrice,
  perMillionToPricePerToken,
  unitsToUsd,
  usdToUnits,
} from './money.js';

describe('money', () => {
  it('parses catalog prices exactly', () => {
    expect(parsePricePerToken('0.00000015')).toBe(150_000_000n);
    expect(parsePricePerToken('0')).toBe(0n);
    expect(parsePricePerToken('1')).toBe(10n ** 15n);
    expect(() => parsePricePerToken('-1')).toThrow();
    expect(() => parsePricePerToken('0.0000000000000001')).toThrow();
    expect(() => parsePricePerToken('abc')).toThrow();
    expect(formatPricePerToken(parsePricePerToken('0.0000006'))).toBe('0.0000006');
  });

  it('prices hour-long cache writes apart, capped at the writes; the hold price is the dearest', () => {
    const prices = { prompt: 1000n, completion: 0n, request: 0n, cacheWrite: 1250n, cacheWrite1h: 2000n };
    const tokens = { promptTokens: 100, completionTokens: 0, cacheWriteTokens: 40, cacheWrite1hTokens: 30 };
    // 60 × 1000 + 10 × 1250 + 30 × 2000 femto = 132,500 femto → 0 units (half up of 0.1325)
    expect(computeCost(prices, tokens).total).toBe(0n);
    const big = { ...tokens, promptTokens: 100_000_000, cacheWriteTokens: 40_000_000, cacheWrite1hTokens: 90_000_000 };
    // The hour count is capped at the writes: 60M × 1000 + 40M × 2000 femto.
    expect(computeCost(prices, big).total).toBe(140_000n);
    // The hour-long price only for a request that asks for hour-long writes.
    expect(worstPromptPrice(prices)).toBe(1250n);
    expect(worstPromptPrice(prices, true)).toBe(2000n);
    expect(worstPromptPrice({ prompt: 1000n, completion: 0n, request: 0n })).toBe(1000n);
    // A :free model must be free of every price, hour-long writes included.
    expect(isZeroPrice({ prompt: 0n, completion: 0n, request: 0n, cacheWrite1h: 1n })).toBe(false);
    expect(isZeroPrice({ prompt: 0n, completion: 0n, request: 0n, cacheWrite1h: 0n })).toBe(true);
  });

  it('formats units as USD text exactly: to the cent, and every further digit there is', () => {
    expect(formatUnitsUsd(5_000_000_000n)).toBe('5.00');
    expect(formatUnitsUsd(4_999_500_000n)).toBe('4.9995');
    expect(formatUnitsUsd(100_000n)).toBe('0.0001');
    expect(formatUnitsUsd(1n)).toBe('0.000000001');
    expect(formatUnitsUsd(-50_000n)).toBe('-0.00005');
    expect(formatUnitsUsd(0n)).toBe('0.00');
    expect(formatUnitsUsd(123_456_789_012_345_678_901n)).toBe('123456789012.345678901');
  });

  it('converts USD amounts without float drift', () => {
    expect(usdToUnits(0.1)).toBe(100_000_000n);
    expect(usdToUnits(10)).toBe(10_000_000_000n);
    expect(usdToUnits(-2.5)).toBe(-2_500_000_000n);
    expect(usdToUnits('0.000000001')).toBe(1n);
    expect(usdToUnits(1e-7)).toBe(100n);
    expect(() => usdToUnits(0.0000000001)).toThrow();
    expect(() => usdToUnits(Number.NaN)).toThrow();
    expect(unitsToUsd(100_000_000n)).toBe(0.1);
    expect(unitsToUsd(-1n)).toBe(-1e-9);
    expect(unitsToUsd(123_456_789_012n)).toBe(123.456789012);
  });

  it('turns units into the double nearest their exact decimal value, on both sides of 2^53', () => {
    // The reference: the decimal text of the exact value, parsed (correctly rounded by JavaScript).
    const viaText = (units: bigint) => {
      const abs = units < 0n ? -units : units;
      const text = `${abs / 1_000_000_000n}.${(abs % 1_000_000_000n).toString().padStart(9, '0')}`;
      return units < 0n ? -Number(text) : Number(text);
    };
    const limit = BigInt(Number.MAX_SAFE_INTEGER);
    for (const units of [
      0n,
      1n,
      -1n,
      999_999_999n,
      1_000_000_000n,
      limit,
      -limit,
      limit + 1n,
      limit + 7n,
      10n ** 30n + 3n,
    ])
      expect(unitsToUsd(units)).toBe(viaText(units));
    fc.assert(
      fc.property(fc.bigInt({ min: -(limit * 4n), max: limit * 4n }), (units) => unitsToUsd(units) === viaText(units)),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(
        fc.bigInt({ min: -10_000_000_000_000n, max: 10_000_000_000_000n }),
        (units) => unitsToUsd(units) === viaText(units),
      ),
      { numRuns: 20_000 },
    );
  });

  it('computes cost in integers and rounds once, half up', () => {
    const prices = {
      prompt: parsePricePerToken('0.00000015'),
      completion: parsePricePerToken('0.0000006'),
      request: 0n,
    };
    const cost = computeCost(prices, { promptTokens: 1000, completionTokens: 500 });
    expect(cost.total).toBe(150_000n + 300_000n);
    expect(cost.prompt + cost.completion).toBe(cost.total);
    const tiny = computeCost(
      { prompt: 400_000n, completion: 0n, request: 0n },
      { promptTokens: 1, completionTokens: 0 },
    );
    expect(tiny.total).toBe(0n);
    const half = computeCost(
      { prompt: 500_000n, completion: 0n, request: 0n },
      { promptTokens: 1, completionTokens: 0 },
    );
    expect(half.total).toBe(1n);
  });

  it('prices cache reads and writes apart from the rest of the prompt', () => {
    const prices = {
      prompt: parsePricePerToken('0.000001'), // 1000 units
      completion: parsePricePerToken('0.000002'),
      request: 0n,
      cacheRead: parsePricePerToken('0.0000001'), // 100 units
      cacheWrite: parsePricePerToken('0.00000125'), // 1250 units
    };
    const cost = computeCost(prices, {
      promptTokens: 160,
      completionTokens: 3,
      cachedTokens: 50,
      cacheWriteTokens: 100,
    });
    expect(cost.prompt).toBe(10n * 1000n + 50n * 100n + 100n * 1250n);
    expect(cost.completion).toBe(3n * 2000n);
    // Without cache prices, cached tokens cost what the prompt costs (as before cache prices existed).
    const plain = computeCost(
      { prompt: prices.prompt, completion: prices.completion, request: 0n },
      { promptTokens: 160, completionTokens: 3, cachedTokens: 50, cacheWriteTokens: 100 },
    );
    expect(plain.prompt).toBe(160n * 1000n);
  });

  it('never prices a prompt token twice when a provider reports more cached tokens than prompt tokens', () => {
    const prices = { prompt: 1000n, completion: 0n, request: 0n, cacheRead: 100n, cacheWrite: 2000n };
    // Reads first: 10 tokens, all read; the reported writes have no tokens left.
    expect(
      computeCost(prices, { promptTokens: 10, completionTokens: 0, cachedTokens: 40, cacheWriteTokens: 5 }).total,
    ).toBe(0n);
    // One unit per prompt token, 0.1 per read, 2 per write.
    const units = { prompt: 10n ** 6n, completion: 0n, request: 0n, cacheRead: 10n ** 5n, cacheWrite: 2n * 10n ** 6n };
    // 4 reads (0.4) and, of the 50 writes reported, the 6 tokens left (12): 12.4 → 12.
    expect(
      computeCost(units, { promptTokens: 10, completionTokens: 0, cachedTokens: 4, cacheWriteTokens: 50 }).prompt,
    ).toBe(12n);
    // A negative count is none.
    expect(computeCost(units, { promptTokens: 10, completionTokens: 0, cachedTokens: -3 }).prompt).toBe(10n);
  });

  it('reads max_price per million tokens', () => {
    expect(perMillionToPricePerToken('0.15')).toBe(parsePricePerToken('0.00000015'));
    expect(perMillionToPricePerToken(1)).toBe(parsePricePerToken('0.000001'));
  });
});
