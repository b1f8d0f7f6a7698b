/** The few node:http chores the mock provider needs. */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { constants, type ServerHttp2Stream } from 'node:http2';
import { setTimeout as delay } from 'node:timers/promises';

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Waits, unless there is nothing to wait for; rejects when the client goes away. */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0) await delay(ms, undefined, { signal });
}

/** Aborts when the response closes, finished or not, so pending timers stop with the client. */
export function closeSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}

/**
 * Ends the connection after what was written is flushed, without finishing the HTTP message. Over
 * HTTP/2 (the compatibility API's response has a `stream`) the stream is reset after its data instead:
 * ending it would finish the message.
 */
export function dropConnection(res: ServerResponse): void {
  const stream = (res as { stream?: ServerHttp2Stream }).stream;
  if (stream !== undefined) {
    stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  const socket = res.socket;
  if (socket === null) return;
  socket.end(() => socket.destroy());
}

export function firstHeader(value: string | string[] | undefined): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? null : first;
}
