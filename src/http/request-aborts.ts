/**
 * The chat requests in flight, each with its own AbortController, and one shutdown that aborts them
 * all. A listener per request on the long-lived shutdown signal would cost an EventTarget add and a
 * remove (a walk of every other request's listener) on each request; here it is a Set entry.
 */
export class RequestAborts {
  private readonly live = new Set<AbortController>();

  constructor(private readonly shutdown: AbortSignal) {
    shutdown.addEventListener(
      'abort',
      () => {
        for (const controller of this.live) controller.abort(shutdown.reason);
        this.live.clear();
      },
      { once: true },
    );
  }

  /** A controller for one request: aborted at once when shutdown already began, else by it until `release`. */
  open(): AbortController {
    const controller = new AbortController();
    if (this.shutdown.aborted) controller.abort(this.shutdown.reason);
    else this.live.add(controller);
    return controller;
  }

  /** The request ended: shutdown no longer concerns it. */
  release(controller: AbortController): void {
    this.live.delete(controller);
  }

  /** Requests still registered (for tests). */
  get size(): number {
    return this.live.size;
  }
}
