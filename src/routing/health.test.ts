import { describe, expect, it } from 'vitest';
import { HealthRegistry, MAX_COOLING_MS } from './health.js';

describe('HealthRegistry cooling', () => {
  it("a Retry-After cools an endpoint for that long, but never past MAX_COOLING_MS (a day's quota or a nonsense figure)", () => {
    const health = new HealthRegistry();
    const now = 1_000_000;
    health.recordFailure('a', now, 'rate_limited', 1e12);
    expect(health.rank('a', now + MAX_COOLING_MS - 1)).toBe(1);
    expect(health.rank('a', now + MAX_COOLING_MS)).toBe(0);
  });

  it('a server failure with a Retry-After cools the endpoint besides counting against its breaker; without one it only counts', () => {
    const health = new HealthRegistry();
    const now = 1_000_000;
    health.recordFailure('a', now, 'server', 30_000);
    expect(health.rank('a', now + 29_999)).toBe(1);
    expect(health.rank('a', now + 30_000)).toBe(0);
    health.recordFailure('b', now, 'server', null);
    expect(health.rank('b', now)).toBe(0);
  });

  it("a failure that is the caller's (a 400) does not cool the endpoint, whatever its Retry-After", () => {
    const health = new HealthRegistry();
    health.recordFailure('a', 0, 'bad_request', 30_000);
    expect(health.rank('a', 1)).toBe(0);
  });
});
