/**
 * Our routes, registered through one function so the not-found handler can tell "no such path"
 * (404) from "path exists, wrong method" (405 with Allow), and so every route states who may call it
 * (`auth`, see route-auth.ts) and how large a body it takes. Admin routes send no CORS headers.
 */
import type {
  FastifyInstance,
  onRequestHookHandler,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify';
import type { RouteAuth } from './route-auth.js';
import type { RouteDoc } from './route-doc.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

/** The path parameters of a URL template, typed from the template itself: `/keys/:hash` → `{ hash: string }`. */
export type ParamsOf<Url extends string> = Url extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name]: string } & ParamsOf<`/${Rest}`>
  : Url extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : Record<never, never>;

/** A route's handler: `request.params` typed from its URL; the query is parsed with a schema (`parseBody`), never cast. */
export type RouteHandler<Url extends string> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  { Params: ParamsOf<Url>; Querystring: unknown; Body: unknown }
>;

export interface RouteDeclaration extends Pick<RouteOptions, 'bodyLimit'> {
  /** Who may call it; checked from the headers before the body is read (`none` for public routes). */
  auth: RouteAuth;
  /** Its schemas and answers, for the OpenAPI document (openapi.ts). */
  doc: RouteDoc;
  /** Hooks that run before authentication (e.g. assigning an id that even a 401 carries). */
  onRequest?: onRequestHookHandler;
  /** `Cache-Control: no-store` on a public route that answers with a secret. */
  noStore?: boolean;
}

export class RouteTable {
  constructor(
    private readonly app: FastifyInstance,
    /** Resolves `auth` (and the announced body length) from the headers; see route-auth.ts. */
    private readonly guard: onRequestHookHandler,
    /** The body limit of routes that declare none (the chat route declares its own, larger one). */
    private readonly defaultBodyLimit: number,
    private readonly patterns: { method: Method; url: string; regex: RegExp; auth: RouteAuth; doc: RouteDoc }[] = [],
  ) {}

  /** The same table, registering on `instance` (an encapsulated plugin, e.g. with its own body parsing). */
  on(instance: FastifyInstance): RouteTable {
    return new RouteTable(instance, this.guard, this.defaultBodyLimit, this.patterns);
  }

  add<Url extends string>(method: Method, url: Url, handler: RouteHandler<Url>, declaration: RouteDeclaration): void {
    // Exactly the paths the router matches (it does not ignore a trailing slash): anything else is a 404, not a 405.
    const regex = new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`);
    this.patterns.push({ method, url, regex, auth: declaration.auth, doc: declaration.doc });
    const onRequest = declaration.onRequest ? [declaration.onRequest, this.guard] : [this.guard];
    this.app.route({
      method,
      url,
      handler: handler as RouteHandlerMethod,
      onRequest,
      bodyLimit: declaration.bodyLimit ?? this.defaultBodyLimit,
      config: {
        auth: declaration.auth,
        ...(declaration.noStore ? { noStore: true } : {}),
        // The operator's API is not for browsers: no CORS headers (preflights: see registerCors).
        ...(declaration.auth === 'admin' ? { cors: false } : {}),
      },
    });
  }

  allowedMethods(path: string): Method[] {
    const clean = path.split('?')[0] ?? path;
    return [...new Set(this.patterns.filter((p) => p.regex.test(clean)).map((p) => p.method))];
  }

  /** Every route with its declared authentication and documentation (the OpenAPI document is built from them). */
  declarations(): { method: Method; url: string; auth: RouteAuth; doc: RouteDoc }[] {
    return this.patterns.map(({ method, url, auth, doc }) => ({ method, url, auth, doc }));
  }
}
