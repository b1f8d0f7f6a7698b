/**
 * The `server` section of the config file: listener, body and JSON limits, timeouts, proxies,
 * connection cap and the metrics listener. Part of `fileConfigSchema` (schema.ts).
 */
import { isIP } from 'node:net';
import { z } from 'zod';

/** proxy-addr's named ranges (Fastify compiles the list): loopback, link-local and unique-local/private networks. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address or CIDR network a trusted proxy connects from: `10.0.0.0/8`, `::1`, `loopback`. */
export function isProxyNetwork(text: string): boolean {
  if (NAMED_RANGES.has(text)) return true;
  const [address = '', prefix, ...rest] = text.split('/');
  if (rest.length > 0) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

const proxyNetwork = z
  .string()
  .refine(
    isProxyNetwork,
    'must be an IP address, a CIDR network (e.g. 10.0.0.0/8) or loopback | linklocal | uniquelocal',
  );

/**
 * Which X-Forwarded-For entries to believe. `false`: none (the socket's address is the client).
 * `true` = 1: one proxy in front (the right-most entry is the client). A number: that many proxies.
 * A list: proxies connect from these networks; the client is the right-most address not in them.
 */
export const trustProxySchema = z.union([
  z.boolean(),
  z.number().int().min(1).max(16),
  z.array(proxyNetwork).min(1).max(256),
]);

const metricsListenerSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535),
  })
  .strict();

export const serverSchema = z
  .object({
    /** Largest request body of `POST /chat/completions`. */
    body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** Largest request body of every other route (admin, keys, BYOK, auth, sessions). */
    small_body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(64 * 1024),
    /** Deepest nesting of arrays/objects in a JSON body, checked while the body arrives. */
    json_max_depth: z.number().int().min(2).max(1000).default(64),
    /** Most values (array elements + object members) in a JSON body, checked while the body arrives. */
    json_max_elements: z.number().int().min(10).default(100_000),
    keep_alive_interval_ms: z.number().int().positive().default(15_000),
    shutdown_grace_ms: z.number().int().nonnegative().default(30_000),
    trust_proxy: trustProxySchema.default(false),
    /** Request line and headers must arrive within this (slow-loris). */
    headers_timeout_ms: z.number().int().positive().default(15_000),
    /** Headers and body must have arrived this long after the request's first byte; responses are not limited by it. */
    body_timeout_ms: z.number().int().positive().default(30_000),
    /** An idle kept-alive client connection is closed after this. */
    keep_alive_timeout_ms: z.number().int().positive().default(72_000),
    /** Open client connections at most (Node's `server.maxConnections`); further connections are closed at once. */
    max_connections: z.number().int().positive().default(8192),
    /** Serve `/metrics` on its own listener (e.g. an internal interface) instead of the API's. */
    metrics: metricsListenerSchema.nullable().default(null),
  })
  .strict();

export type ServerConfig = z.output<typeof serverSchema>;
