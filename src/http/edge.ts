/**
 * Edge protection in HTTP terms (docs/architecture.md): the per-IP guard as an `onRequest` hook on
 * `/api/v1/*`, and the server's connection timeouts.
 *
 * Timeouts are Node's own, which stop counting once a request has fully ARRIVED, so a long answer or
 * stream is never cut by them:
 * - `headersTimeout`: the request line and headers must arrive within it (slow-loris);
 * - `requestTimeout`: headers AND body must arrive within it, counted from the request's first byte
 *   (a body that trickles or stalls);
 * - `keepAliveTimeout`: an idle kept-alive connection is closed after it.
 * Node checks them every `connectionsCheckingInterval` (default 30 s, far too coarse for a 15 s
 * header deadline), so the interval is derived from the deadlines. `connectionTimeout` (socket
 * inactivity) stays 0: a non-streamed answer may take minutes with no byte on the socket.
 */
import type { Socket } from 'node:net';
import type { IncomingMessage, ServerOptions, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { EdgeGuard } from '../limits/edge-guard.js';
import { renderError } from './error-table.js';
import type { TollgateError } from '../core/errors.js';

export interface ServerTimeouts {
  readonly headers_timeout_ms: number;
  readonly body_timeout_ms: number;
  readonly keep_alive_timeout_ms: number;
}

export interface TimeoutOptions {
  http: Pick<ServerOptions, 'headersTimeout' | 'requestTimeout' | 'connectionsCheckingInterval' | 'requireHostHeader'>;
  requestTimeout: number;
  connectionTimeout: number;
  keepAliveTimeout: number;
}

/** Fastify server options (`http` is passed to `http.createServer`). */
export function timeoutOptions(timeouts: ServerTimeouts): TimeoutOptions {
  // Headers are part of the request: the whole-request deadline can never be shorter than theirs.
  const requestTimeout = Math.max(timeouts.body_timeout_ms, timeouts.headers_timeout_ms);
  const connectionsCheckingInterval = Math.max(50, Math.min(1_000, Math.floor(timeouts.headers_timeout_ms / 4)));
  return {
    // Node's own refusal of an HTTP/1.1 request without `Host` is a 400 with no body: `requireHost` answers it.
    http: {
      headersTimeout: timeouts.headers_timeout_ms,
      requestTimeout,
      connectionsCheckingInterval,
      requireHostHeader: false,
    },
    requestTimeout,
    connectionTimeout: 0,
    keepAliveTimeout: timeouts.keep_alive_timeout_ms,
  };
}

/** Answers what Node rejects before any route runs (timeouts, oversized or malformed headers) with the error record. */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'Malformed HTTP request';
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'The request (headers and body) did not arrive in time';
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'Request headers are too large';
  }
  this.log.debug({ code: error.code }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify({ error: { code: status, message } });
    const reason =
      status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
        // As every other answer (docs/api.md §1): written here below the framework, so by hand.
        `X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * RFC 3986 §3.2.2–3 `host [ ":" port ]`: an IP literal (IPv6, with RFC 6874's zone ID, or IPvFuture)
 * or a reg-name (empty allowed), digits for the port.
 */
const HOST_VALUE =
  /^(?:\[(?:[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9\-._~%]+)?|[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+)\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

/** Why the request's Host is refused (RFC 9112 §3.2: "MUST respond with a 400"), or null. */
export function hostProblem(rawHeaders: readonly string[], httpVersion: string): string | null {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (value !== undefined) return 'A request may carry one Host header only';
    value = rawHeaders[i + 1]!;
  }
  if (value === undefined) return httpVersion === '1.0' ? null : 'HTTP/1.1 requests need a Host header';
  return HOST_VALUE.test(value) ? null : 'The Host header is not a valid host';
}

/**
 * A request whose `Host` is missing (HTTP/1.1; 1.0 may leave it out), repeated or not a host (RFC 9112
 * §3.2: "MUST respond with a 400") gets the 400 in the error record, before any route, guard or
 * authentication runs: the origin checks compare against it, and a proxy in front may have read
 * another of the values.
 */
export function requireHost(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const problem = hostProblem(request.raw.rawHeaders, request.raw.httpVersion);
    if (problem === null) return;
    return reply
      .code(400)
      .header('connection', 'close')
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: { code: 400, message: problem } }));
  });
}

/**
 * `Expect` (RFC 9110 §10.1.1). Node answers `100 Continue` as soon as the headers arrive, before any
 * route runs — inviting the body of a request that authentication is about to refuse. With these
 * listeners the request goes to Fastify without it: `100 Continue` is sent once the route's guard
 * has passed and the body is about to be read (`json-body.ts`); a request refused before that gets
 * its final status alone, on a connection Node then closes (the body never comes). An expectation
 * other than `100-continue` gets a 417 in the error record (Node's own 417 has no body).
 */
export function handleExpect(app: FastifyInstance): void {
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) =>
    app.server.emit('request', request, response),
  );
  app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify({ error: { code: 417, message: 'Only "Expect: 100-continue" is supported' } });
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}

/** Operations endpoints a prober or scraper polls: never throttled. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The edge guard on every route but the operations endpoints (unmatched paths too), before any auth
 * work; it also counts the requests in flight for the overload monitor.
 */
export function registerEdgeGuard(
  app: FastifyInstance,
  guard: EdgeGuard,
  onRefused: () => void = () => undefined,
): void {
  if (!guard.enabled) return;
  const monitor = guard.monitor;
  if (monitor) {
    app.addHook('onReady', async () => monitor.start());
    app.addHook('onClose', async () => monitor.stop());
  }
  app.addHook('onRequest', async (request, reply) => {
    // Decide by the route the router matched, not the raw URL: `/%61pi/v1/...` decodes to `/api/v1/...`.
    if (EXEMPT.has(request.routeOptions.url ?? '')) return;
    // `request.ip` is the socket's address, or X-Forwarded-For's client when `server.trust_proxy` is set.
    const refusal: TollgateError | null = guard.check(request.ip);
    if (!refusal) {
      if (monitor) {
        monitor.inFlight++;
        reply.raw.once('close', () => monitor.inFlight--);
      }
      return;
    }
    onRefused();
    const rendered = renderError(refusal);
    // Answering here ends the request: no route, no body parsing, no authentication.
    return reply.code(rendered.status).headers(rendered.headers).header('connection', 'close').send(rendered.body);
  });
}
