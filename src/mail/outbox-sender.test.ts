import { describe, expect, it } from 'vitest';
import { retryDelay } from './outbox-sender.js';
import { describeSendFailure, isPermanentSendFailure } from './smtp-transport.js';

describe('outbox sender policy', () => {
  it('backs off exponentially with jitter, capped', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4].map((n) => retryDelay(n, 1000, 60_000, mid))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelay(30, 1000, 60_000, mid)).toBe(60_000);
    expect(retryDelay(1, 1000, 60_000, () => 0)).toBe(800);
    expect(retryDelay(1, 1000, 60_000, () => 1)).toBe(1200);
  });

  it('gives up at once only on permanent refusals', () => {
    expect(isPermanentSendFailure({ responseCode: 550, code: 'EENVELOPE' })).toBe(true);
    expect(isPermanentSendFailure({ code: 'EENVELOPE' })).toBe(true);
    expect(isPermanentSendFailure({ responseCode: 451 })).toBe(false);
    expect(isPermanentSendFailure({ responseCode: 535, code: 'EAUTH' })).toBe(false);
    expect(isPermanentSendFailure({ code: 'ECONNECTION' })).toBe(false);
  });

  it("records the server's reply once: its line starts with the code already", () => {
    expect(describeSendFailure({ responseCode: 550, response: '550 5.1.1 No such user', code: 'EENVELOPE' })).toBe(
      '550 5.1.1 No such user',
    );
    expect(describeSendFailure({ responseCode: 451, response: 'Try later' })).toBe('451 Try later');
    expect(describeSendFailure({ code: 'ECONNECTION' })).toBe('ECONNECTION');
  });
});
