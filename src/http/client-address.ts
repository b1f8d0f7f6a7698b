/**
 * Which address is the client's (`request.ip`: the edge guard's bucket, the request logs), from
 * `server.trust_proxy`. X-Forwarded-For is read from the right: each trusted proxy appends the
 * address it saw, so the right-most entry not added by a trusted proxy is the client. The left-most
 * entry is whatever the caller wrote and is never believed.
 *
 * Fastify's own `trustProxy: true` takes the left-most entry (spoofable) and, in this version, a
 * number trusts nothing at all; so hop counts are given to it as a function of the hop index.
 */
import type { FastifyServerOptions } from 'fastify';

export type TrustProxySetting = boolean | number | readonly string[];

export function trustProxyOption(setting: TrustProxySetting): FastifyServerOptions['trustProxy'] {
  if (setting === false) return false;
  if (Array.isArray(setting)) return [...setting];
  const hops = setting === true ? 1 : (setting as number);
  // Index 0 is the socket's peer, 1 the right-most X-Forwarded-For entry, and so on leftwards.
  return (_address: string, hop: number) => hop < hops;
}
