import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RequestAborts } from './request-aborts.js';

describe('RequestAborts', () => {
  it('aborts every request still in flight when shutdown aborts, with its reason', () => {
    const shutdown = new AbortController();
    const aborts = new RequestAborts(shutdown.signal);
    const running = aborts.open();
    const finished = aborts.open();
    aborts.release(finished);
    expect(aborts.size).toBe(1);

    const reason = new Error('shutdown');
    shutdown.abort(reason);
    expect(running.aborted).toBe(true);
    expect(running.reason).toBe(reason);
    expect(finished.aborted).toBe(false);
    expect(aborts.size).toBe(0);
  });

  it('opens an already aborted cancellation once shutdown has begun, and holds nothing for it', () => {
    const shutdown = new AbortController();
    const aborts = new RequestAborts(shutdown.signal);
    shutdown.abort('gone');
    const late = aborts.open();
    expect(late.aborted).toBe(true);
    expect(late.reason).toBe('gone');
    expect(aborts.size).toBe(0);
  });

  it('leaves the shutdown signal with one listener however many requests come and go', () => {
    const shutdown = new AbortController();
    const aborts = new RequestAborts(shutdown.signal);
    const open = Array.from({ length: 100 }, () => aborts.open());
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
    for (const cancellation of open) aborts.release(cancellation);
    expect(aborts.size).toBe(0);
  });
});
