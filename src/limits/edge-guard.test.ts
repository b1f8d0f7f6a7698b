import { describe, expect, it } from 'vitest';
import { EdgeGuard } from './edge-guard.js';

const NO_OVERLOAD = {
  enabled: false,
  max_event_loop_delay_ms: 200,
  max_event_loop_utilization: 1,
  max_in_flight: null,
  max_heap_ratio: 0.85,
};

describe('EdgeGuard', () => {
  it('lets a burst through per address, then refuses with the 429 record until tokens refill', () => {
    const clock = { t: 1_000_000 };
    const guard = new EdgeGuard({ burst: 3, per_second: 2, max_clients: 10, overload: NO_OVERLOAD }, () => clock.t);
    for (let i = 0; i < 3; i++) expect(guard.check('10.0.0.1')).toBeNull();
    const refusal = guard.check('10.0.0.1');
    expect(refusal?.code).toBe('limits.rate_limited');
    expect(refusal?.headers).toEqual({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(clock.t + 500),
      'Retry-After': '1',
    });
    expect(refusal?.metadata).toEqual({
      error_type: 'rate_limit_exceeded',
      limit_source: 'edge',
      headers: { 'X-RateLimit-Limit': '3', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(clock.t + 500) },
    });
    expect(guard.check('10.0.0.2')).toBeNull(); // another address has its own bucket
    clock.t += 500;
    expect(guard.check('10.0.0.1')).toBeNull();
  });

  it('an IPv6 client is its /64: fresh source addresses within it share one bucket; an IPv4-mapped address is the IPv4 one', () => {
    const guard = new EdgeGuard({ burst: 3, per_second: 0.001, max_clients: 10, overload: NO_OVERLOAD }, () => 0);
    for (let i = 1; i <= 3; i++) expect(guard.check(`2001:db8:5:6::${i}`)).toBeNull();
    expect(guard.check('2001:db8:5:6:a:b:c:d')?.code).toBe('limits.rate_limited');
    expect(guard.check('2001:db8:5:7::1')).toBeNull();
    for (let i = 0; i < 3; i++) expect(guard.check('192.0.2.9')).toBeNull();
    expect(guard.check('::ffff:192.0.2.9')?.code).toBe('limits.rate_limited');
    // Link-local peers: the zone id (the interface's name) does not make another client.
    for (let i = 1; i <= 3; i++) expect(guard.check(`fe80::${i}%eth0.100`)).toBeNull();
    expect(guard.check('fe80::99%br-1a2b3c')?.code).toBe('limits.rate_limited');
  });

  it('burst 0 and overload shedding off turn it off', () => {
    const guard = new EdgeGuard({ burst: 0, per_second: 100, max_clients: 10, overload: NO_OVERLOAD }, () => 0);
    expect(guard.enabled).toBe(false);
    for (let i = 0; i < 1000; i++) expect(guard.check('10.0.0.1')).toBeNull();
  });
});

describe('EdgeGuard defaults', () => {
  it('caps no address while the process is not overloaded', () => {
    const guard = new EdgeGuard(
      { burst: 0, per_second: 100, max_clients: 10, overload: { ...NO_OVERLOAD, enabled: true } },
      () => 0,
    );
    expect(guard.enabled).toBe(true);
    for (let i = 0; i < 10_000; i++) expect(guard.check('10.0.0.1')).toBeNull();
  });
});
