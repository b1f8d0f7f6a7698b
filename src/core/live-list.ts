/**
 * The members of a population that comes and goes with the requests (handlers in flight, request
 * cancellations): added and removed at O(1) without a hash table. A Set or Map that lives in the
 * old generation and sees an insert and a delete per request rebuilds its table every few inserts —
 * in the old generation, where the table lives (V8 allocates a rehashed table in its owner's
 * generation) — ~75–150 bytes of old-generation garbage each time, and that garbage is what brings
 * the mark-compacts that stall every request in flight (docs/architecture.md, "What the hot path
 * costs"). Here a member's node is a small young object that dies with its request.
 */
export interface LiveNode<T> {
  readonly value: T;
  /** @internal */ prev: LiveNode<T> | null;
  /** @internal */ next: LiveNode<T> | null;
  /** @internal The list it is in; null once removed. */ list: LiveList<T> | null;
}

export class LiveList<T> implements Iterable<T> {
  private head: LiveNode<T> | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(value: T): LiveNode<T> {
    const node: LiveNode<T> = { value, prev: null, next: this.head, list: this };
    if (this.head) this.head.prev = node;
    this.head = node;
    this.count += 1;
    return node;
  }

  /** Removes a node added to this list; a node already removed is left alone. */
  remove(node: LiveNode<T>): void {
    if (node.list !== this) return;
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    node.prev = null;
    node.next = null;
    node.list = null;
    this.count -= 1;
  }

  /** The members now, newest first (a copy: members may come and go while the caller works on them). */
  values(): T[] {
    const values: T[] = [];
    for (let node = this.head; node; node = node.next) values.push(node.value);
    return values;
  }

  [Symbol.iterator](): Iterator<T> {
    return this.values()[Symbol.iterator]();
  }
}
