/**
 * Our routes, registered through one function so the not-found handler can tell "no such path"
 * (404) from "path exists, wrong method" (405 with Allow).
 */
import type { FastifyInstance, RouteHandlerMethod, RouteOptions } from 'fastify';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

export class RouteTable {
  constructor(
    private readonly app: FastifyInstance,
    private readonly patterns: { method: Method; regex: RegExp }[] = [],
  ) {}

  /** The same table, registering on `instance` (an encapsulated plugin, e.g. with its own body parsing). */
  on(instance: FastifyInstance): RouteTable {
    return new RouteTable(instance, this.patterns);
  }

  add(method: Method, url: string, handler: RouteHandlerMethod, options: Pick<RouteOptions, 'bodyLimit' | 'onRequest'> = {}): void {
    // Exactly the paths the router matches (it does not ignore a trailing slash): anything else is a 404, not a 405.
    const regex = new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`);
    this.patterns.push({ method, regex });
    this.app.route({ method, url, handler, ...options });
  }

  allowedMethods(path: string): Method[] {
    const clean = path.split('?')[0] ?? path;
    return [...new Set(this.patterns.filter((p) => p.regex.test(clean)).map((p) => p.method))];
  }
}
