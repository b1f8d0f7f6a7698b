import { describe, expect, it } from 'vitest';
import { EndpointStats } from './endpoint-stats.js';

const MIN = 60_000;

describe('endpoint stats', () => {
  it('reports null without data', () => {
    expect(new EndpointStats().snapshot(0)).toEqual({
      uptime5m: null,
      uptime30m: null,
      uptime1d: null,
      latency30m: null,
      throughput30m: null,
    });
  });

  it('computes uptime over each window from per-minute buckets', () => {
    const s = new EndpointStats();
    const t0 = 1_000 * MIN;
    for (let i = 0; i < 9; i++) s.recordSuccess(t0, 100, 50);
    s.recordFailure(t0); // 90 % at t0
    for (let i = 0; i < 10; i++) s.recordFailure(t0 + 10 * MIN); // 10 failures ten minutes later
    const snap = s.snapshot(t0 + 10 * MIN);
    expect(snap.uptime5m).toBe(0);
    expect(snap.uptime30m).toBe(45);
    expect(snap.uptime1d).toBe(45);
    expect(s.snapshot(t0 + 2 * 1440 * MIN).uptime1d).toBeNull();
  });

  it('computes latency and throughput percentiles over 30 minutes', () => {
    const s = new EndpointStats();
    const t0 = 5_000 * MIN;
    for (let i = 1; i <= 20; i++) s.recordSuccess(t0 + i * 1000, i * 10, i);
    const snap = s.snapshot(t0 + 30_000);
    expect(snap.latency30m).toEqual({ p50: 100, p75: 150, p90: 180, p99: 200 });
    expect(snap.throughput30m?.p50).toBe(10);
    expect(s.snapshot(t0 + 31 * MIN).latency30m).toBeNull();
  });

  it('keeps a bounded sample per minute under heavy traffic', () => {
    const s = new EndpointStats();
    for (let i = 0; i < 10_000; i++) s.recordSuccess(0, 5, 5);
    const snap = s.snapshot(0);
    expect(snap.uptime5m).toBe(100);
    expect(snap.latency30m?.p99).toBe(5);
  });
});
