/**
 * Closing a connection in stages (RFC 9112 §9.6), as nginx's `lingering_close` and Go's server do.
 *
 * A request refused before its body is read (401 from the headers, 413 from `Content-Length`, 400 for
 * nesting, the edge guard's 429) is answered with `Connection: close`, and Node then closes the socket
 * as soon as the answer is written. A client still sending its body (Python's `http.client` and
 * `requests` send all of it before they read) makes the closed socket's kernel answer with a reset,
 * and the reset makes the client fail on its next write — `BrokenPipeError`, `ECONNRESET` — and lose
 * the answer waiting unread in its buffer: measured, every such client uploading 8 MiB with a wrong
 * key got a broken pipe instead of the 401.
 *
 * Here the answer is followed by the write side's close (FIN: "no more from me"), and the rest of the
 * body is read and thrown away until the client closes its side, stops sending for `idleMs`, or
 * `maxMs` have passed; only then is the socket destroyed. Node's HTTP parser keeps reading meanwhile
 * (its request is dumped: nothing is buffered or parsed as JSON); a request the client pipelines after
 * the refused one is dropped unserved.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** No byte from the client for this long: it is not sending any more. */
  idleMs: number;
  /** The most a connection lingers, however slowly the rest keeps coming. */
  maxMs: number;
}

export const DEFAULT_LINGER: LingerLimits = { idleMs: 2_000, maxMs: 30_000 };

const LINGERING = Symbol('tollgate.lingering');
/** The last request that arrived on the connection: its unread body is what lingering reads away. */
const LAST_REQUEST = Symbol('tollgate.lastRequest');
type LingeringSocket = Socket & { [LINGERING]?: true; [LAST_REQUEST]?: IncomingMessage };

function lingerThenDestroy(socket: LingeringSocket, limits: LingerLimits): void {
  if (socket[LINGERING]) return;
  socket[LINGERING] = true;
  // The client's FIN: it sends nothing more (and once the answer has left, nothing is left to do).
  socket.once('end', () => {
    if (socket.writableFinished) socket.destroy();
  });
  if (socket.writable) socket.end();
  if (socket.destroyed) return;
  // The request's body must flow for the socket to be read: one left paused by a consumer that gave
  // up on it (the JSON scanner's refusal unpipes it) stops Node's parser, and with it the reading —
  // the client's writes then fill the buffers and the idle clock resets the connection.
  const request = socket[LAST_REQUEST];
  if (request && !request.complete) {
    request.unpipe();
    request.removeAllListeners('data');
    request.resume();
  }
  // The clocks start once the answer has left (a large one to a slow reader takes its time, as before).
  if (socket.writableFinished) linger(socket, limits);
  else socket.once('finish', () => linger(socket, limits));
}

function linger(socket: Socket, limits: LingerLimits): void {
  if (socket.destroyed) return;
  if (socket.readableEnded) return void socket.destroy();
  const started = Date.now();
  let idleSince = started;
  // Node's parser reads the socket's handle directly (no 'data' events): progress is its byte count.
  let lastRead = socket.bytesRead;
  const timer = setInterval(
    () => {
      const now = Date.now();
      if (socket.bytesRead !== lastRead) {
        lastRead = socket.bytesRead;
        idleSince = now;
      }
      if (now - idleSince >= limits.idleMs || now - started >= limits.maxMs) socket.destroy();
    },
    Math.max(10, Math.min(limits.idleMs / 4, 250)),
  );
  timer.unref();
  socket.once('close', () => clearInterval(timer));
}

export interface Lingering {
  /** Closing the server: lingering connections are destroyed now, and later ones close at once. */
  stop(): void;
}

/**
 * Every connection of `server` closes in stages when Node closes it after an answer (`destroySoon`,
 * called once a `Connection: close` answer is written); other closes (a reset, a timeout, the
 * connection cap) are unchanged.
 */
export function lingerBeforeClose(server: Server, limits: LingerLimits = DEFAULT_LINGER): Lingering {
  const lingering = new Set<Socket>();
  let stopped = false;
  server.on('connection', (socket: LingeringSocket) => {
    const nodeDestroySoon = socket.destroySoon;
    socket.destroySoon = function destroySoon(this: LingeringSocket) {
      if (stopped) return nodeDestroySoon.call(this);
      if (this[LINGERING]) return;
      lingering.add(this);
      this.once('close', () => lingering.delete(this));
      lingerThenDestroy(this, limits);
    };
  });
  // A request the client pipelined after the refused one, parsed while the connection lingers: its
  // answer could never be written, so it is not served at all (else a chat completion would run and
  // be charged, its answer thrown away). Caught before any listener — the framework's included — sees it.
  const emit = server.emit;
  server.emit = function emitUnlessLingering(this: Server, ...args: unknown[]): boolean {
    if (args[0] === 'request') {
      const request = args[1] as IncomingMessage;
      const socket = request.socket as LingeringSocket;
      if (socket[LINGERING]) {
        // Its bytes are read and thrown away like the rest; the close waits for the answer before it to leave.
        if (socket.writableFinished) socket.destroy();
        else request.resume();
        return true;
      }
      socket[LAST_REQUEST] = request;
    }
    return Reflect.apply(emit, this, args) as boolean;
  } as Server['emit'];
  return {
    stop() {
      stopped = true;
      for (const socket of lingering) {
        if (socket.writableFinished) socket.destroy();
        else socket.once('finish', () => socket.destroy());
      }
    },
  };
}
