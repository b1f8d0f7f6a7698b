import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from './circuit-breaker.js';

const config = { failureThreshold: 3, openMs: 1000, maxOpenMs: 4000, probeTimeoutMs: 10_000 };

describe('circuit breaker', () => {
  it('opens after consecutive failures, not after scattered ones', () => {
    const b = new CircuitBreaker(config);
    b.onFailure(0);
    b.onFailure(0);
    b.onSuccess();
    b.onFailure(0);
    b.onFailure(0);
    expect(b.state(0)).toBe('closed');
    b.onFailure(0);
    expect(b.state(0)).toBe('open');
    expect(b.tryAcquire(500)).toBe(false);
  });

  it('lets exactly one probe through when the cool-down ends, and closes on its success', () => {
    const b = new CircuitBreaker(config);
    for (let i = 0; i < 3; i++) b.onFailure(0);
    expect(b.state(1000)).toBe('half_open');
    expect(b.tryAcquire(1000)).toBe(true);
    expect(b.tryAcquire(1001)).toBe(false);
    b.onSuccess();
    expect(b.state(1002)).toBe('closed');
    expect(b.tryAcquire(1002)).toBe(true);
  });

  it('doubles the cool-down after a failed probe, up to the cap, and resets after recovery', () => {
    const b = new CircuitBreaker(config);
    for (let i = 0; i < 3; i++) b.onFailure(0);
    expect(b.tryAcquire(1000)).toBe(true);
    b.onFailure(1000); // probe failed → open for 2000
    expect(b.state(2999)).toBe('open');
    expect(b.tryAcquire(3000)).toBe(true);
    b.onFailure(3000); // → 4000
    expect(b.tryAcquire(7000)).toBe(true);
    b.onFailure(7000); // capped at 4000
    expect(b.state(10_999)).toBe('open');
    expect(b.tryAcquire(11_000)).toBe(true);
    b.onSuccess();
    for (let i = 0; i < 3; i++) b.onFailure(20_000);
    expect(b.state(21_000)).toBe('half_open'); // back to the base cool-down
  });

  it('frees a probe slot that never reported back', () => {
    const b = new CircuitBreaker(config);
    for (let i = 0; i < 3; i++) b.onFailure(0);
    expect(b.tryAcquire(1000)).toBe(true);
    expect(b.tryAcquire(5000)).toBe(false);
    expect(b.tryAcquire(11_001)).toBe(true);
    b.release();
    expect(b.tryAcquire(11_002)).toBe(true);
  });
});
