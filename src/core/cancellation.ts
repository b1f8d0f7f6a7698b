/**
 * Cancellation of one chat request (its caller left, or shutdown's grace ended) or of one upstream
 * attempt (a timeout, or the request's cancellation). Read like an AbortSignal — `aborted`,
 * `reason`, an `abort` event — and taken by undici as a request signal (an emitter of `abort`).
 *
 * Not an AbortController: on Node 20 every AbortSignal gets a hidden class of its own (Node builds
 * it by setting an EventTarget's prototype, then adding fields), so creating one costs ~2.5 µs and
 * adding and removing a listener ~2 µs more, against ~0.1 µs here; a chat request made two.
 * `abortSignalFor` gives an API that needs a real AbortSignal one that follows a Cancellation.
 */
import { EventEmitter } from 'node:events';

/** What is read of a signal: an AbortSignal or a Cancellation. */
export interface CancelState {
  readonly aborted: boolean;
  readonly reason: unknown;
}

/** A signal that can be listened to: an AbortSignal or a Cancellation. */
export interface CancelSignal extends CancelState {
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancellation extends EventEmitter implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;

  /**
   * Aborts once (later calls change nothing) and runs the listeners synchronously, as
   * AbortController.abort does; without a reason, the reason is an AbortError as for an AbortSignal.
   * As with an AbortSignal, a listener that throws does not stop the others and does not throw out
   * of `abort` (shutdown aborts every request in a loop): the error is rethrown on the next tick, an
   * uncaught exception.
   */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const listeners = this.rawListeners('abort') as (() => void)[];
    this.removeAllListeners('abort');
    for (const listener of listeners) {
      try {
        listener.call(this);
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }

  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void {
    if (options?.once) this.once(type, listener);
    else this.on(type, listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    this.off(type, listener);
  }
}

/**
 * An AbortSignal that aborts with `signal` (itself when it is one), for APIs that need the real
 * thing (AbortSignal.any, fetch); `release` stops following it.
 */
export function abortSignalFor(signal: CancelSignal): { signal: AbortSignal; release: () => void } {
  if (signal instanceof AbortSignal) return { signal, release: () => undefined };
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const follow = () => controller.abort(signal.reason);
  signal.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, release: () => signal.removeEventListener('abort', follow) };
}
