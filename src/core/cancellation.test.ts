import { describe, expect, it, vi } from 'vitest';
import { Cancellation, abortSignalFor } from './cancellation.js';

describe('Cancellation', () => {
  it('aborts once, with its reason, running every listener synchronously', () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    cancellation.addEventListener('abort', () => heard.push('once'), { once: true });
    cancellation.addEventListener('abort', () => heard.push('on'));
    const reason = new Error('first');
    cancellation.abort(reason);
    cancellation.abort(new Error('second'));
    expect(heard).toEqual(['once', 'on']);
    expect(cancellation.aborted).toBe(true);
    expect(cancellation.reason).toBe(reason);
  });

  it('gives an AbortError as the reason when aborted without one, as an AbortSignal does', () => {
    const cancellation = new Cancellation();
    cancellation.abort();
    const signal = AbortSignal.abort();
    expect((cancellation.reason as DOMException).name).toBe((signal.reason as DOMException).name);
  });

  it('runs every listener when one throws, and rethrows that error on the next tick, not to the caller', () => {
    const cancellation = new Cancellation();
    const failure = new Error('listener bug');
    const heard: string[] = [];
    cancellation.addEventListener('abort', () => {
      throw failure;
    });
    cancellation.addEventListener('abort', () => heard.push('second'), { once: true });
    const deferred: (() => void)[] = [];
    const nextTick = vi.spyOn(process, 'nextTick').mockImplementation(((callback: () => void) => {
      deferred.push(callback);
    }) as typeof process.nextTick);
    try {
      expect(() => cancellation.abort('x')).not.toThrow();
    } finally {
      nextTick.mockRestore();
    }
    expect(heard).toEqual(['second']);
    expect(deferred).toHaveLength(1);
    expect(() => deferred[0]!()).toThrow(failure);
  });

  it('does not call a removed listener', () => {
    const cancellation = new Cancellation();
    let called = false;
    const listener = () => (called = true);
    cancellation.addEventListener('abort', listener, { once: true });
    cancellation.removeEventListener('abort', listener);
    cancellation.abort('x');
    expect(called).toBe(false);
    expect(cancellation.listenerCount('abort')).toBe(0);
  });
});

describe('abortSignalFor', () => {
  it('returns an AbortSignal itself', () => {
    const controller = new AbortController();
    expect(abortSignalFor(controller.signal).signal).toBe(controller.signal);
  });

  it('follows a cancellation with its reason, and stops following once released', () => {
    const followed = new Cancellation();
    const { signal } = abortSignalFor(followed);
    followed.abort('caller left');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('caller left');

    const released = new Cancellation();
    const handle = abortSignalFor(released);
    handle.release();
    expect(released.listenerCount('abort')).toBe(0);
    released.abort('late');
    expect(handle.signal.aborted).toBe(false);
  });

  it('is aborted at once for a cancellation that already is', () => {
    const done = new Cancellation();
    done.abort('gone');
    const { signal } = abortSignalFor(done);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('gone');
  });
});
