/**
 * The process's client connections (`server.max_connections`), shared fairly between addresses.
 *
 * Node's own `server.maxConnections` refuses every new connection once the count is reached, whoever
 * holds the others: one address that opens thousands of connections and keeps them alive with a
 * request a minute (~115 requests a second for 8,192 connections at the 72-s keep-alive) never makes
 * the gateway busy, so the edge guard never sheds it, and every other client is refused (outside
 * check). Here, at the cap, a newcomer is let in by closing an idle connection — kept alive, no
 * request on it — of the address that holds the most, when that is another address holding more than
 * the newcomer's own. A newcomer from the address that holds the most (a flood, or a whole deployment
 * behind one load balancer without `trust_proxy`) is refused as Node refused it; so is any newcomer
 * when the largest holder's connections are all busy: a request in progress is never cut.
 *
 * The address is the socket's peer (an IPv6 one as its /64): `X-Forwarded-For` is a request's, not a
 * connection's. A connection is busy from the arrival of a request's headers to its response's end; one
 * whose request is still arriving, slowly, is idle here.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressSubject } from '../limits/address-subject.js';

/** Requests in progress on a connection (absent: none). */
const BUSY = Symbol('tollgate.requestsInProgress');
type TrackedSocket = Socket & { [BUSY]?: number };

export type SlotOutcome = 'refused' | 'made_room';

export class ConnectionSlots {
  private readonly byAddress = new Map<string, Set<TrackedSocket>>();
  private open = 0;

  constructor(
    private readonly max: number,
    /** Told of each newcomer refused at the cap, and of each idle connection closed to make room. */
    private readonly onOutcome: (outcome: SlotOutcome) => void = () => undefined,
  ) {}

  /** Takes over the server's connection count (its `maxConnections` is left unset). */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('request', (request: { socket: TrackedSocket }, response: { once(e: 'close', f: () => void): void }) => {
      const socket = request.socket;
      socket[BUSY] = (socket[BUSY] ?? 0) + 1;
      response.once('close', () => {
        socket[BUSY] = (socket[BUSY] ?? 1) - 1;
      });
    });
  }

  /** Connections open now (for tests and metrics). */
  get size(): number {
    return this.open;
  }

  admit(socket: TrackedSocket): void {
    // An IPv6 client as its /64, as the edge guard counts it: a subscriber picks any address inside it,
    // and one connection from each of thousands would be "equal shares".
    const address = addressSubject(socket.remoteAddress ?? '');
    if (this.open >= this.max && !this.makeRoomFor(address)) {
      this.onOutcome('refused');
      socket.destroy();
      return;
    }
    let held = this.byAddress.get(address);
    if (!held) {
      held = new Set();
      this.byAddress.set(address, held);
    }
    const own = held;
    own.add(socket);
    this.open++;
    socket.once('close', () => {
      if (!own.delete(socket)) return;
      this.open--;
      if (own.size === 0 && this.byAddress.get(address) === own) this.byAddress.delete(address);
    });
  }

  /** Closes one idle connection of the largest holder other than `address`; false when there is none to close. */
  private makeRoomFor(address: string): boolean {
    let largest: Set<TrackedSocket> | null = null;
    let largestAddress = '';
    for (const [holder, held] of this.byAddress) {
      if (largest === null || held.size > largest.size) {
        largest = held;
        largestAddress = holder;
      }
    }
    const own = this.byAddress.get(address)?.size ?? 0;
    // Equal shares (or the newcomer's own address the largest): nothing fairer to make room with.
    if (largest === null || largestAddress === address || largest.size <= own + 1) return false;
    for (const socket of largest) {
      if ((socket[BUSY] ?? 0) > 0 || socket.destroyed) continue;
      // Counted out now, not at its `close`: the newcomer takes its place at once.
      largest.delete(socket);
      this.open--;
      if (largest.size === 0) this.byAddress.delete(largestAddress);
      socket.destroy();
      this.onOutcome('made_room');
      return true;
    }
    return false;
  }
}
