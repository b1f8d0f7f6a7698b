/**
 * OAuth PKCE (docs/api.md): the exchange (`POST /auth/keys`, no credentials: the code and verifier
 * are the credentials), code creation by a key of the account (`POST /auth/keys/code`), and the two
 * JSON endpoints behind the `/auth` approval page (session only).
 */
import {
  approveSchema,
  assertMayAuthorize,
  checkAuthorization,
  cleanAppTitle,
  createCodeSchema,
  decide,
  exchangeCode,
  exchangeSchema,
  issueCode,
  previewQuerySchema,
  renderAuthorization,
} from '../../pipeline/oauth.js';
import { authenticateAccount, requireSession } from '../account-auth.js';
import { parseBody } from '../parse-body.js';
import { appAttribution } from '../request-context.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { authorizationPreviewSchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

export function registerOAuthRoutes(routes: RouteTable, services: Services): void {
  const deps = { store: services.store, bus: services.bus, now: services.now };

  routes.add(
    'POST',
    '/api/v1/auth/keys',
    async (request, reply) => {
      const input = parseBody(exchangeSchema, request.body);
      const { key, accountId } = await exchangeCode(deps, input);
      return reply.header('cache-control', 'no-store').send({ key, user_id: accountId });
    },
    {
      auth: 'none',
      noStore: true,
      doc: {
        summary: 'Exchange an authorization code and its PKCE verifier for a key',
        tag: 'OAuth',
        body: exchangeSchema,
        responses: { 200: json(z.object({ key: z.string(), user_id: z.string() })) },
        // docs/api.md: an unknown, used or expired code, or a verifier that does not match it.
        errors: [403],
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/auth/keys/code',
    async (request, reply) => {
      // Any key of the account (inference or management), or the dashboard's session.
      const caller = await authenticateAccount(services, request, reply, 'any');
      const { workspace_id: _workspace, ...fields } = parseBody(createCodeSchema, request.body);
      if (request.principal?.kind === 'key') await assertMayAuthorize(deps, request.principal.key);
      const issued = await issueCode(
        deps,
        caller.accountId,
        checkAuthorization(fields, services.now(), cleanAppTitle(appAttribution(request).title)),
      );
      return reply.header('cache-control', 'no-store').send({
        data: { id: issued.code, app_id: issued.appId, created_at: new Date(issued.createdAt).toISOString() },
      });
    },
    {
      auth: 'account-any',
      doc: {
        summary: 'Create an authorization code for the calling account',
        tag: 'OAuth',
        body: createCodeSchema,
        responses: {
          200: json(z.object({ data: z.object({ id: z.string(), app_id: z.int(), created_at: z.iso.datetime() }) })),
        },
      },
    },
  );

  routes.add(
    'GET',
    '/api/v1/oauth/authorize',
    async (request, reply) => {
      await requireSession(services, request);
      const query = parseBody(previewQuerySchema, request.query);
      return reply
        .header('cache-control', 'no-store')
        .send({ data: renderAuthorization(checkAuthorization(query, services.now())) });
    },
    {
      auth: 'session',
      doc: {
        summary: 'What an app asks for, checked, for the approval page',
        tag: 'OAuth',
        query: previewQuerySchema,
        responses: { 200: json(z.object({ data: authorizationPreviewSchema })) },
      },
    },
  );

  routes.add(
    'POST',
    '/api/v1/oauth/authorize',
    async (request, reply) => {
      const { active } = await requireSession(services, request);
      const { decision, state, ...fields } = parseBody(approveSchema, request.body);
      const authorization = checkAuthorization(fields, services.now());
      const redirectUrl = await decide(deps, active.session.accountId, authorization, decision, state);
      request.log.info({ app: authorization.origin, decision }, 'OAuth authorization decided');
      return reply.header('cache-control', 'no-store').send({ data: { redirect_url: redirectUrl } });
    },
    {
      auth: 'session',
      doc: {
        summary: 'Approve or deny an app; answers where to send the browser',
        tag: 'OAuth',
        body: approveSchema,
        responses: { 200: json(z.object({ data: z.object({ redirect_url: z.string() }) })) },
      },
    },
  );
}
