/**
 * The chat requests in flight, each with its own Cancellation, and one shutdown that cancels them
 * all. A listener per request on the long-lived shutdown signal would cost an EventTarget add and a
 * remove (a walk of every other request's listener) on each request; a Set entry would rebuild the
 * Set's table in the old generation every few requests (core/live-list.ts); here it is a list node.
 */
import { Cancellation } from '../core/cancellation.js';
import { LiveList, type LiveNode } from '../core/live-list.js';

/** A request's cancellation, with its place in the list of requests in flight. */
class TrackedCancellation extends Cancellation {
  node: LiveNode<TrackedCancellation> | null = null;
}

export class RequestAborts {
  private readonly live = new LiveList<TrackedCancellation>();

  constructor(private readonly shutdown: AbortSignal) {
    shutdown.addEventListener(
      'abort',
      () => {
        for (const cancellation of this.live) {
          this.release(cancellation);
          cancellation.abort(shutdown.reason);
        }
      },
      { once: true },
    );
  }

  /** The cancellation of one request: aborted at once when shutdown already began, else by it until `release`. */
  open(): Cancellation {
    const cancellation = new TrackedCancellation();
    if (this.shutdown.aborted) cancellation.abort(this.shutdown.reason);
    else cancellation.node = this.live.add(cancellation);
    return cancellation;
  }

  /** The request ended: shutdown no longer concerns it. */
  release(cancellation: Cancellation): void {
    if (!(cancellation instanceof TrackedCancellation) || cancellation.node === null) return;
    this.live.remove(cancellation.node);
    cancellation.node = null;
  }

  /** Requests still registered (for tests). */
  get size(): number {
    return this.live.size;
  }
}
