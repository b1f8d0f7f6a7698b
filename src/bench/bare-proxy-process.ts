/**
 * Child process: the benchmark's reference, a bare reverse proxy — `node:http` in front of one undici
 * `Pool` to the provider, request and response bytes piped, hop-by-hop headers dropped, nothing else
 * (no authentication, no parsing, no accounting). What any Node proxy costs at the least; the
 * gateway's throughput and CPU are reported as ratios to it.
 */
import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';
import { serveHelper } from './child-process.js';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
]);

function forwardable(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

async function start(upstream: string): Promise<string> {
  const base = new URL(upstream);
  const pool = new Pool(base.origin, { connections: 256, keepAliveTimeout: 30_000 });
  const prefix = base.pathname.replace(/\/$/, '');
  const server = createServer((req, res) => {
    pool
      .request({
        path: prefix + (req.url ?? '/'),
        method: req.method as 'POST',
        headers: forwardable(req.headers) as Record<string, string>,
        body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
      })
      .then(async (answer) => {
        res.writeHead(answer.statusCode, forwardable(answer.headers));
        await pipeline(answer.body, res);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let url: Promise<string> | null = null;

serveHelper({
  /** Starts (once) a proxy to `upstream` (the provider's base URL); answers the proxy's base URL. */
  start: (upstream: string) => (url ??= start(upstream)),
});
