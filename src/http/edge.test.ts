import { describe, expect, it } from 'vitest';
import { timeoutOptions } from './edge.js';

describe('timeoutOptions', () => {
  it('maps the config to Node server options, never limiting responses', () => {
    expect(
      timeoutOptions({ headers_timeout_ms: 15_000, body_timeout_ms: 30_000, keep_alive_timeout_ms: 72_000 }),
    ).toEqual({
      http: {
        headersTimeout: 15_000,
        requestTimeout: 30_000,
        connectionsCheckingInterval: 1_000,
        requireHostHeader: false, // answered with the error record (requireHost)
      },
      requestTimeout: 30_000,
      connectionTimeout: 0,
      keepAliveTimeout: 72_000,
    });
  });

  it('keeps the whole-request deadline at least the header deadline and checks often enough for short ones', () => {
    const options = timeoutOptions({ headers_timeout_ms: 1_000, body_timeout_ms: 500, keep_alive_timeout_ms: 5_000 });
    expect(options.requestTimeout).toBe(1_000);
    expect(options.http.connectionsCheckingInterval).toBe(250);
  });
});
