/** Small readers of request facts shared by routes. */
import type { FastifyRequest } from 'fastify';
import type { AppAttribution } from '../pipeline/generation.js';
import { decodeHeader } from '../usage/app-identity.js';

/** A header's text as the caller wrote it (UTF-8 decoded, so `/generation` shows what rankings show), cut to 500. */
function header(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text ? decodeHeader(text).slice(0, 500) : null;
}

export function appAttribution(request: FastifyRequest): AppAttribution {
  return {
    title: header(request, 'x-service-title') ?? header(request, 'x-title') ?? header(request, 'x-openrouter-title'),
    referer: header(request, 'http-referer') ?? header(request, 'referer'),
    userAgent: header(request, 'user-agent'),
  };
}
