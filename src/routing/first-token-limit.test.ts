import { describe, expect, it } from 'vitest';
import { adaptiveFirstTokenLimit } from './first-token-limit.js';
import { EndpointStats } from './endpoint-stats.js';

const ADAPTIVE = { multiplier: 3, minSamples: 20, maxMs: 120_000 };

describe('the adaptive first-token limit', () => {
  it('is the configured limit until enough samples were measured', () => {
    expect(adaptiveFirstTokenLimit(10_000, null, ADAPTIVE)).toBe(10_000);
    expect(adaptiveFirstTokenLimit(10_000, { p99: 30_000, samples: 19 }, ADAPTIVE)).toBe(10_000);
  });

  it('grows to a multiple of the measured p99 for a model that is slow by nature, up to the ceiling', () => {
    expect(adaptiveFirstTokenLimit(10_000, { p99: 8_000, samples: 20 }, ADAPTIVE)).toBe(24_000);
    expect(adaptiveFirstTokenLimit(10_000, { p99: 60_000, samples: 50 }, ADAPTIVE)).toBe(120_000);
  });

  it('never drops below the configured limit: a fast endpoint that goes silent is still given up on after it', () => {
    expect(adaptiveFirstTokenLimit(10_000, { p99: 400, samples: 500 }, ADAPTIVE)).toBe(10_000);
  });

  it('keeps a configured limit above the ceiling, and does nothing when disabled', () => {
    expect(adaptiveFirstTokenLimit(200_000, { p99: 90_000, samples: 50 }, ADAPTIVE)).toBe(200_000);
    expect(adaptiveFirstTokenLimit(10_000, { p99: 60_000, samples: 50 }, null)).toBe(10_000);
  });

  it('reads the p99 of the last 30 minutes from the endpoint statistics', () => {
    const stats = new EndpointStats();
    const now = 10 * 60_000;
    // 20 samples in each of 5 minutes (within the per-minute reservoir): 100 ms … 10 000 ms.
    for (let m = 0; m < 5; m++)
      for (let i = 1; i <= 20; i++) stats.recordSuccess(now - (5 - m) * 60_000, (m * 20 + i) * 100, null);
    expect(stats.firstTokenLatency(now)).toEqual({ p99: 9_900, samples: 100 });
    expect(stats.firstTokenLatency(now + 31 * 60_000)).toBeNull();
  });
});
