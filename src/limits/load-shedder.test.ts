import { describe, expect, it } from 'vitest';
import { LoadShedder } from './load-shedder.js';
import { derivedMaxInFlight, pressureOf } from './overload-signals.js';

describe('LoadShedder', () => {
  it('sheds nobody while there is no pressure, however much one address sends', () => {
    const shedder = new LoadShedder(100);
    for (let t = 0; t < 5_000; t++) expect(shedder.admit('10.0.0.9', t, 'none').shed).toBe(false);
  });

  it('never sheds a lone client under pressure: it is the whole load, not more than its share', () => {
    const shedder = new LoadShedder(100);
    for (let t = 0; t < 5_000; t++) expect(shedder.admit('10.0.0.1', t, 'overloaded').shed).toBe(false);
  });

  it('under pressure sheds the flooding address first and keeps serving the others', () => {
    const shedder = new LoadShedder(100);
    let floodShed = 0;
    let normalShed = 0;
    for (let t = 0; t < 10_000; t++) {
      // The flood sends 10 requests per ms; two normal clients one every 100 ms.
      for (let i = 0; i < 10; i++) if (shedder.admit('10.0.0.66', t, 'overloaded').shed) floodShed++;
      if (t % 100 === 0 && shedder.admit('10.0.0.1', t, 'overloaded').shed) normalShed++;
      if (t % 100 === 50 && shedder.admit('10.0.0.2', t, 'overloaded').shed) normalShed++;
    }
    expect(normalShed).toBe(0);
    expect(floodShed).toBeGreaterThan(90_000);
  });

  it('sheds two flooding addresses beside one normal client (the arithmetic mean was a flood’s own size)', () => {
    const shedder = new LoadShedder(100);
    let floodShed = 0;
    let normalShed = 0;
    for (let t = 0; t < 10_000; t++) {
      for (let i = 0; i < 2; i++) {
        if (shedder.admit('10.0.0.66', t, 'overloaded').shed) floodShed++;
        if (shedder.admit('10.0.0.67', t, 'overloaded').shed) floodShed++;
      }
      if (t % 100 === 0 && shedder.admit('10.0.0.1', t, 'overloaded').shed) normalShed++;
    }
    expect(normalShed).toBe(0);
    expect(floodShed).toBeGreaterThan(35_000);
  });

  it('sheds nobody when two busy clients differ by a few times (3:1): no flood, only a skew', () => {
    const shedder = new LoadShedder(100);
    for (let t = 0; t < 5_000; t++) {
      for (let i = 0; i < 3; i++) expect(shedder.admit('10.0.0.1', t, 'overloaded').shed).toBe(false);
      expect(shedder.admit('10.0.0.2', t, 'overloaded').shed).toBe(false);
    }
  });

  it('keeps the typical rate right over a long run (the running log sum does not drift)', () => {
    const shedder = new LoadShedder(1_000);
    // 13 addresses taking turns, one request per ms between them, for 200 s (200 sweeps, 6 re-sums).
    let last = { ratePerSecond: 0, fairPerSecond: 0 };
    for (let t = 0; t < 200_000; t++) last = shedder.admit(`10.0.0.${t % 13}`, t, 'none');
    // Each sends 1000/13 ≈ 77 a second: the geometric mean of equals is each one's.
    expect(last.fairPerSecond).toBeGreaterThan(70);
    expect(last.fairPerSecond).toBeLessThan(80);
    expect(Math.abs(last.ratePerSecond - last.fairPerSecond) / last.fairPerSecond).toBeLessThan(0.1);
  });

  it('sheds nobody among equals: a load spread evenly is no flood', () => {
    const shedder = new LoadShedder(100);
    for (let t = 0; t < 3_000; t++)
      for (let c = 0; c < 5; c++) expect(shedder.admit(`10.0.0.${c}`, t, 'overloaded').shed).toBe(false);
  });

  it('forgets addresses gone quiet, so the mean is over the active ones, and holds at most max addresses', () => {
    const shedder = new LoadShedder(3);
    for (let c = 0; c < 10; c++) shedder.admit(`10.0.1.${c}`, 0, 'none');
    expect(shedder.activeClients).toBe(3);
    shedder.admit('10.0.0.1', 60_000, 'none');
    expect(shedder.activeClients).toBe(1);
  });

  it('at the cap drops the address seen longest ago, its last request counted to the second', () => {
    const fresh = Math.LN2; // the rate of an address seen once: a new record
    const kept = new LoadShedder(2);
    kept.admit('a', 0, 'none');
    kept.admit('b', 100, 'none');
    kept.admit('a', 1_500, 'none'); // more than a second since a last moved: a goes behind b
    kept.admit('c', 1_600, 'none'); // the cap: b goes
    expect(kept.admit('a', 1_700, 'none').ratePerSecond).toBeGreaterThan(fresh);
    expect(kept.admit('b', 1_800, 'none').ratePerSecond).toBeCloseTo(fresh);

    const withinSecond = new LoadShedder(2);
    withinSecond.admit('a', 0, 'none');
    withinSecond.admit('b', 100, 'none');
    withinSecond.admit('a', 500, 'none'); // within the second: a keeps its place before b
    withinSecond.admit('c', 600, 'none'); // the cap: a goes
    expect(withinSecond.admit('a', 700, 'none').ratePerSecond).toBeCloseTo(fresh);
  });
});

describe('overload signals', () => {
  const thresholds = { maxEventLoopDelayMs: 200, maxEventLoopUtilization: 0.9, maxInFlight: 1000, maxHeapRatio: 0.85 };
  const calm = { eventLoopDelayMs: 10, eventLoopUtilization: 0.3, inFlight: 10, heapRatio: 0.2 };
  it('any signal past its threshold is pressure', () => {
    expect(pressureOf(calm, thresholds)).toBe('none');
    expect(pressureOf({ ...calm, eventLoopDelayMs: 250 }, thresholds)).toBe('overloaded');
    expect(pressureOf({ ...calm, eventLoopUtilization: 0.95 }, thresholds)).toBe('overloaded');
    expect(pressureOf({ ...calm, inFlight: 1001 }, thresholds)).toBe('overloaded');
    expect(pressureOf({ ...calm, heapRatio: 0.9 }, thresholds)).toBe('overloaded');
    // Utilization 1 is "off": a loop can be no more than fully busy.
    expect(pressureOf({ ...calm, eventLoopUtilization: 1 }, { ...thresholds, maxEventLoopUtilization: 1 })).toBe(
      'none',
    );
  });

  it('derives the in-flight threshold from the heap limit (64 KiB a request), never below 1000', () => {
    expect(derivedMaxInFlight(4 * 1024 ** 3)).toBe(65_536);
    expect(derivedMaxInFlight(1024 ** 2)).toBe(1_000);
  });
});
