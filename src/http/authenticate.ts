/**
 * Authentication inside a handler, for routes registered without an `auth` declaration. Prefer the
 * declaration (route-auth.ts): it authenticates from the headers before the body is read. When the
 * route's hook already authenticated a key, that key is returned (checked against `kind`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyKind } from '../auth/authenticator.js';
import { keyLogId } from '../auth/key-format.js';
import { TollgateError } from '../core/errors.js';
import type { KeyRecord } from '../store/types.js';
import { singleAuthorization } from './credentials.js';
import type { Services } from './services.js';

export async function authenticate(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  kind: KeyKind,
): Promise<KeyRecord> {
  const principal = request.principal;
  if (principal?.kind === 'key') {
    const { key } = principal;
    if (kind === 'inference' && key.isManagement)
      throw new TollgateError(
        'auth.wrong_key_kind',
        'Management keys cannot be used for inference; use an inference key',
      );
    if (kind === 'management' && !key.isManagement)
      throw new TollgateError('auth.wrong_key_kind', 'This route requires a management key');
    return key;
  }
  const key = await services.auth.authenticate(singleAuthorization(request), kind);
  request.log = reply.log = request.log.child({ key: keyLogId(key.hash) });
  return key;
}
