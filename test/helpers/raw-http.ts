/**
 * A hand-driven HTTP/1.1 connection: the test decides when each byte goes out and records, in order,
 * what happened (its own writes, the server's answer, the close), so suites can assert the ORDER of
 * events rather than durations.
 */
import { connect, type Socket } from 'node:net';

export interface RawExchange {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves with the status line's code once a status line has arrived. */
  status: Promise<number>;
  /** Resolves when the server closed the connection (or it broke). */
  closed: Promise<void>;
  /** Writes and waits until the bytes were handed to the kernel; false when the connection is gone. */
  write(data: string | Buffer): Promise<boolean>;
}

export function rawExchange(
  url: string,
  onEvent: (event: string) => void = () => undefined,
  /** The client's own address (another loopback address: another client to the gateway). */
  localAddress?: string,
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let data = '';
    let statusSeen: (code: number) => void = () => undefined;
    const status = new Promise<number>((done) => (statusSeen = done));
    const socket = connect({ host: hostname, port: Number(port), ...(localAddress ? { localAddress } : {}) }, () =>
      resolve({
        socket,
        received: () => data,
        status,
        closed,
        write: (chunk) =>
          new Promise((done) => {
            if (socket.destroyed || !socket.writable) return done(false);
            socket.write(chunk, (error) => done(!error));
          }),
      }),
    );
    const closed = new Promise<void>((done) => socket.once('close', () => (onEvent('closed'), done())));
    socket.on('data', (chunk: Buffer) => {
      const before = data.length;
      data += chunk.toString('latin1');
      const match = before < 12 ? /^HTTP\/1\.1 (\d{3}) /.exec(data) : null;
      if (match) {
        onEvent(`status ${match[1]}`);
        statusSeen(Number(match[1]));
      }
    });
    socket.on('error', () => undefined); // a reset while we still write is expected after a refusal
    socket.once('error', reject);
  });
}

/** The JSON body of a complete (Content-Length) response in `raw`. */
export function jsonBodyOf(raw: string): any {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}
