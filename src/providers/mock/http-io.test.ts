import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { closeSignal, pause } from './http-io.js';

describe('mock http-io', () => {
  it('aborts the signal when the response closes, which cancels a pending pause at once', async () => {
    const res = new EventEmitter();
    const signal = closeSignal(res as unknown as ServerResponse);
    const started = performance.now();
    const waiting = pause(10_000, signal);
    res.emit('close');
    expect(signal.aborted).toBe(true);
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('does not wait, nor create a timer, for zero', async () => {
    const signal = new AbortController().signal;
    await expect(pause(0, signal)).resolves.toBeUndefined();
  });
});
