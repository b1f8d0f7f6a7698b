/**
 * The account holder's dashboard (a single-page app): its known page paths answer index.html, its
 * hashed assets answer from memory with a year of immutable caching. Only the listed paths are
 * pages, so every other unknown path keeps answering the JSON 404 error record, `Accept` header or
 * not (docs/api.md: unknown routes → 404 error body), and `/api/*`, `/healthz`, `/readyz`, `/metrics`
 * are never shadowed.
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { checkCallbackUrl } from '../../auth/callback-url.js';
import { TollgateError } from '../../core/errors.js';
import { parseBody } from '../parse-body.js';
import type { RouteTable } from '../route-table.js';
import type { RouteDoc } from '../route-doc.js';
import { ASSET_MEDIA_TYPES, type WebBundle } from '../web-bundle.js';

/** Client-side routes of web/src (keep in step with PATHS in web/src/router.tsx). */
export const SPA_PATHS = [
  '/',
  '/signin',
  '/signup',
  '/forgot-password',
  '/reset-password',
  '/keys',
  '/activity',
  '/credits',
  '/apps',
  '/settings',
  '/auth',
  '/rankings',
  '/docs',
] as const;

// No inline script or style anywhere in the app (uPlot sizes elements through the CSSOM, which style-src does not govern).
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // The OAuth page's query (callback URL, challenge) has no business in another site's logs.
  'referrer-policy': 'no-referrer',
} as const;

const PAGE_DOC: RouteDoc = {
  summary: 'A page of the account holder’s dashboard',
  tag: 'Dashboard',
  responses: {
    200: { description: 'The dashboard (index.html)', media: ['text/html'] },
    400: { description: '`/auth` with an invalid `callback_url`: the page shows why', media: ['text/html'] },
    503: { description: 'The dashboard was not built', media: ['text/html'] },
  },
};

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tollgate: dashboard not built</title></head>
<body><h1>The dashboard was not built</h1>
<p>This gateway has no built dashboard (dist/web/index.html is missing). Run <code>npm run build</code> and restart it.
The API under /api/v1 works regardless.</p></body></html>
`;

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * index.html with the reason the OAuth request was refused, for the page to show before anything
 * else (it cannot read the HTTP status of its own document). The message comes from a fixed table.
 */
function withAuthProblem(index: Buffer, message: string): Buffer {
  const meta = `<meta name="tollgate-auth-problem" content="${escapeAttribute(message)}">`;
  return Buffer.from(index.toString('utf8').replace('<head>', `<head>${meta}`), 'utf8');
}

function sendPage(reply: FastifyReply, status: number, body: Buffer | string): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).send(body);
}

/** The consent page's query: `callback_url` is checked by checkCallbackUrl, which explains what is wrong with it. */
const AUTH_PAGE_QUERY = z.looseObject({ callback_url: z.unknown().optional() });

export function registerWebRoutes(routes: RouteTable, bundle: WebBundle): void {
  const { index } = bundle;
  for (const path of SPA_PATHS) {
    routes.add(
      'GET',
      path,
      async (request, reply) => {
        if (!index) return sendPage(reply, 503, NOT_BUILT);
        if (path === '/auth') {
          const checked = checkCallbackUrl(parseBody(AUTH_PAGE_QUERY, request.query).callback_url);
          if (!checked.ok) return sendPage(reply, 400, withAuthProblem(index, checked.message));
        }
        return sendPage(reply, 200, index);
      },
      { auth: 'none', doc: PAGE_DOC },
    );
  }

  routes.add(
    'GET',
    '/assets/:name',
    async (request, reply) => {
      const name = request.params.name;
      const file = bundle.assets.get(name);
      if (!file) throw new TollgateError('route.not_found', `No asset ${name.slice(0, 200)}`);
      return reply
        .code(200)
        .headers({
          'content-type': file.contentType,
          'cache-control': 'public, max-age=31536000, immutable',
          'x-content-type-options': 'nosniff',
        })
        .send(file.body);
    },
    {
      auth: 'none',
      doc: {
        summary: 'A file of the dashboard’s build (hashed name, cached for a year)',
        tag: 'Dashboard',
        responses: { 200: { description: 'The file', media: ASSET_MEDIA_TYPES } },
      },
    },
  );
}
