import { describe, expect, it } from 'vitest';
import {
  computeCost,
  formatPricePerToken,
  parsePricePerToken,
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

  it('reads max_price per million tokens', () => {
    expect(perMillionToPricePerToken('0.15')).toBe(parsePricePerToken('0.00000015'));
    expect(perMillionToPricePerToken(1)).toBe(parsePricePerToken('0.000001'));
  });
});
