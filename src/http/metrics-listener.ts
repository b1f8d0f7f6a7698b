/**
 * `/metrics` on a listener of its own (`server.metrics: { host, port }`), e.g. bound to an internal
 * interface a scraper reaches and callers do not. The API's listener then has no `/metrics` route.
 * With TOLLGATE_METRICS_TOKEN set, this listener requires it too.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminGuard } from '../auth/admin-token.js';
import type { Metrics } from '../observability/metrics.js';
import { renderError } from './error-table.js';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'x-content-type-options': 'nosniff',
  });
  response.end(JSON.stringify(body));
}

export async function startMetricsListener(
  metrics: Metrics,
  listen: { host: string; port: number },
  token: string | null,
): Promise<MetricsListener> {
  const guard = token === null ? null : adminGuard(token, 'metrics');
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') return sendJson(response, 404, { error: { code: 404, message: 'Not found' } });
    if (request.method !== 'GET')
      return sendJson(response, 405, { error: { code: 405, message: 'Method not allowed' } });
    try {
      guard?.(request.headers.authorization);
    } catch (error) {
      const rendered = renderError(error);
      return sendJson(response, rendered.status, rendered.body);
    }
    metrics.registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.registry.contentType });
        response.end(text);
      },
      () => sendJson(response, 500, { error: { code: 500, message: 'Internal server error' } }),
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
