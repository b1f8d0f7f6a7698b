/**
 * CORS for browser callers. Credentials are bearer keys, never cookies, so any origin may call the
 * API (as OpenRouter allows), with any request header; preflights are answered before
 * authentication. The operator's admin API is not for browsers: its routes send no CORS headers and
 * its preflights are refused.
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false`: @fastify/cors adds nothing to this route's answers. */
    cors?: false;
  }
}

/** Registered before the routes, so its hooks apply to all of them. */
export function registerCors(app: FastifyInstance): void {
  void app.register(cors, {
    origin: '*',
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    // Every header the caller's preflight asks for is allowed (the plugin echoes
    // Access-Control-Request-Headers): the official clients send their own — `openai`'s X-Stainless-*
    // on every request, @openrouter/sdk's X-OpenRouter-* — and a browser sends nothing a preflight
    // refused. Nothing rides on a header's absence: session routes check the Origin and a CSRF token,
    // and no answer allows credentials.
    exposedHeaders: [
      'X-Generation-Id',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
    ],
    maxAge: 86_400,
    strictPreflight: false,
  });
  // More specific than the plugin's `OPTIONS *`: a preflight for the admin API gets no CORS answer
  // (the not-found handler's 404/405), so a browser never sends the real request.
  app.route({
    method: 'OPTIONS',
    url: '/api/v1/admin/*',
    config: { cors: false },
    handler: (_request, reply) => reply.callNotFound(),
  });
}
