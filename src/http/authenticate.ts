/**
 * Authenticates a request's bearer key and names the key in every later log line of the request by
 * its hash prefix (never the key).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyKind } from '../auth/authenticator.js';
import { keyLogId } from '../auth/key-format.js';
import type { KeyRecord } from '../store/types.js';
import type { Services } from './services.js';

export async function authenticate(services: Services, request: FastifyRequest, reply: FastifyReply, kind: KeyKind): Promise<KeyRecord> {
  const key = await services.auth.authenticate(request.headers.authorization, kind);
  request.log = reply.log = request.log.child({ key: keyLogId(key.hash) });
  return key;
}
