/**
 * CORS for browser callers. Credentials are bearer keys, never cookies, so any origin may call the
 * API (as OpenRouter allows); preflights are answered before authentication.
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Registered before the routes, so its hooks apply to all of them. */
export function registerCors(app: FastifyInstance): void {
  void app.register(cors, {
    origin: '*',
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'HTTP-Referer', 'X-Title', 'X-Service-Title', 'X-OpenRouter-Title', 'User-Agent'],
    exposedHeaders: ['X-Generation-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    maxAge: 86_400,
    strictPreflight: false,
  });
}
