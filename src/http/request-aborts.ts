/**
 * The chat requests in flight, each with its own Cancellation, and one shutdown that cancels them
 * all. A listener per request on the long-lived shutdown signal would cost an EventTarget add and a
 * remove (a walk of every other request's listener) on each request; here it is a Set entry.
 */
import { Cancellation } from '../core/cancellation.js';

export class RequestAborts {
  private readonly live = new Set<Cancellation>();

  constructor(private readonly shutdown: AbortSignal) {
    shutdown.addEventListener(
      'abort',
      () => {
        for (const cancellation of this.live) cancellation.abort(shutdown.reason);
        this.live.clear();
      },
      { once: true },
    );
  }

  /** The cancellation of one request: aborted at once when shutdown already began, else by it until `release`. */
  open(): Cancellation {
    const cancellation = new Cancellation();
    if (this.shutdown.aborted) cancellation.abort(this.shutdown.reason);
    else this.live.add(cancellation);
    return cancellation;
  }

  /** The request ended: shutdown no longer concerns it. */
  release(cancellation: Cancellation): void {
    this.live.delete(cancellation);
  }

  /** Requests still registered (for tests). */
  get size(): number {
    return this.live.size;
  }
}
