/**
 * The HTTP server's own setup, kept out of the composition root (docs/architecture.md, "Enforced
 * rules"): the Fastify instance with its limits and deadlines, the mapping of Fastify's own errors to
 * the API's error record, request metrics, the 404/405 answer, and the set of route handlers in flight
 * (shutdown waits for them before draining the settler).
 */
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { ServerConfig } from '../config/server-schema.js';
import { TollgateError } from '../core/errors.js';
import { LiveList } from '../core/live-list.js';
import { lazyChildLoggerFactory } from './lazy-logger.js';
import { loggableUrl } from './loggable-url.js';
import type { Metrics } from '../observability/metrics.js';
import { trustProxyOption } from './client-address.js';
import { clientErrorHandler, handleExpect, timeoutOptions } from './edge.js';
import { ConnectionSlots, type SlotOutcome } from './connection-slots.js';
import { lingerBeforeClose } from './lingering-close.js';
import { renderError } from './error-table.js';
import type { RouteTable } from './route-table.js';

/** Fastify's own failures (body parsing, router) as the API's errors; null: not a client error (a bug). */
export function fastifyErrorToTollgate(error: FastifyError): TollgateError | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TollgateError('request.body_too_large', 'Request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new TollgateError('request.invalid_json', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TollgateError('request.invalid_json', 'Request body is empty; expected a JSON object');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new TollgateError('request.invalid_json', 'Content-Length does not match the body');
    case 'FST_ERR_BAD_URL':
      return new TollgateError('request.invalid_body', 'The URL path is not valid (bad percent-encoding)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No resource has an id that long (the routes look such ids up as "not found" too).
      return new TollgateError('resource.not_found', 'Not found: a path segment is too long');
    default:
      if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY')
        return new TollgateError('request.invalid_json', 'Request body is not valid JSON');
      if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500)
        return new TollgateError('request.invalid_body', 'Invalid request');
      return null;
  }
}

export function replyWithError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = error instanceof TollgateError ? error : fastifyErrorToTollgate(error);
  if (!known) request.log.error({ err: error }, 'unhandled error');
  const rendered = renderError(known ?? error);
  if (known && rendered.status >= 500) request.log.warn({ code: known.code, status: rendered.status }, known.message);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

/** Fastify's two lines per request give way to the access line (installRequestMetrics); its error lines stay. */
class AccessLineLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error) super.requestCompleted(error, request, reply, metadata);
  }
}

/**
 * Router failures (bad percent-encoding, an over-long path segment) are answered before any hook
 * runs: what every answer gets from a hook — counted and logged (installRequestMetrics), nosniff —
 * is done here for them. Observers are added once the app is composed.
 */
const routerFailureObservers = new WeakMap<
  FastifyInstance,
  Array<(request: FastifyRequest, reply: FastifyReply) => void>
>();

function onRouterFailure(app: FastifyInstance, observe: (request: FastifyRequest, reply: FastifyReply) => void): void {
  const observers = routerFailureObservers.get(app) ?? [];
  observers.push(observe);
  routerFailureObservers.set(app, observers);
}

/** The Fastify instance: routes declare their own body limit (route-table.ts), deadlines from the edge guard. */
export function createHttpServer(
  server: ServerConfig,
  logger: FastifyBaseLogger,
  onConnectionSlot?: (outcome: SlotOutcome) => void,
): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger,
    // Per-request loggers are built only when something is logged; one access line per request
    // (installRequestMetrics) instead of Fastify's two.
    childLoggerFactory: lazyChildLoggerFactory,
    logController: new AccessLineLogController(),
    // Routes declare their own limit (route-table.ts); the chat route takes server.body_limit_bytes.
    bodyLimit: server.small_body_limit_bytes,
    trustProxy: trustProxyOption(server.trust_proxy),
    // A request arriving while the gateway stops gets the error record (`server.shutting_down`, app.ts).
    return503OnClosing: false,
    // Header, body and keep-alive deadlines of the edge guard (see http/edge.ts); never the response's.
    ...timeoutOptions(server),
    clientErrorHandler,
    // Router failures (bad percent-encoding, an over-long path segment) answer with the error record too.
    frameworkErrors: (error, request, reply) => {
      for (const observe of routerFailureObservers.get(app) ?? []) observe(request, reply);
      return replyWithError(error, request, reply.header('x-content-type-options', 'nosniff'));
    },
  });
  // Slow clients hold sockets: at the cap, room is made by closing an idle connection of the address
  // holding the most, else the new connection is closed at once (connection-slots.ts).
  new ConnectionSlots(server.max_connections, onConnectionSlot).attach(app.server);
  // An answer given before the body was read is not lost to a reset while the client still sends it;
  // a shutdown does not wait for lingering connections (they have nothing more to give).
  const lingering = lingerBeforeClose(app.server);
  app.addHook('preClose', async () => lingering.stop());
  // `100 Continue` only after authentication (edge.ts).
  handleExpect(app);
  app.setErrorHandler(replyWithError);
  return app;
}

/**
 * Counts, times and logs every request by route, whatever answers it (the edge guard and 404s
 * included): one access line when it ends, with the client address the edge guard used.
 */
export function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  const observe = (request: FastifyRequest, reply: FastifyReply): void => {
    const started = process.hrtime.bigint();
    reply.raw.once('close', () => {
      const route = request.routeOptions.url ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const statusCode = reply.raw.statusCode;
      metrics.httpRequests.inc({ route, method: request.method, status: String(statusCode) });
      metrics.httpDuration.observe({ route }, seconds);
      // Fastify's `req` serializer reads these fields: method, URL (its secrets redacted), the client
      // address the edge guard used; `res` gives the status.
      const req = {
        method: request.method,
        url: loggableUrl(request.url),
        headers: request.headers,
        host: request.host,
        ip: request.ip,
        socket: request.socket,
      };
      request.log.info({ req, res: reply, responseTime: seconds * 1000 }, 'request completed');
    });
  };
  app.addHook('onRequest', async (request, reply) => observe(request, reply));
  onRouterFailure(app, observe);
}

/** No route: 405 with `Allow` when the path exists with other methods, else 404 — both in the error record. */
export function installNotFound(app: FastifyInstance, routes: RouteTable): void {
  app.setNotFoundHandler((request, reply) => {
    const allowed = routes.allowedMethods(request.url);
    const error =
      allowed.length > 0
        ? new TollgateError(
            'route.method_not_allowed',
            `Method ${request.method} is not allowed on ${request.url.split('?')[0]}`,
            { headers: { allow: allowed.join(', ') } },
          )
        : new TollgateError('route.not_found', `No route for ${request.method} ${request.url.split('?')[0]}`);
    const rendered = renderError(error);
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
  });
}

/**
 * Every route handler in flight (registered after this call), so shutdown can wait for the ones woken
 * by the forced connection close — a hijacked stream's handler runs until its charge is queued.
 */
export function trackHandlersInFlight(app: FastifyInstance): LiveList<Promise<unknown>> {
  const inFlight = new LiveList<Promise<unknown>>();
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request, reply) {
      const result: unknown = handler.call(this, request, reply);
      if (result instanceof Promise) {
        const tracked = result.then(
          () => undefined,
          () => undefined,
        );
        const node = inFlight.add(tracked);
        void tracked.then(() => inFlight.remove(node));
      }
      return result;
    };
  });
  return inFlight;
}
