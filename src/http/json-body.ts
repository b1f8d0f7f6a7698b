/**
 * How a JSON request body is read (after the route's authentication, see route-auth.ts):
 * - a `Content-Encoding` other than `identity` → 415 (Tollgate does not decompress request bodies,
 *   so no decompression bomb and no body whose real size escapes the limit);
 * - the bytes are scanned for nesting depth and value count while they arrive: over a limit → 400,
 *   the connection closed, the rest never read;
 * - the complete body must be valid UTF-8 (→ 400; JSON is UTF-8 and a replacement character would
 *   silently change what the caller sent), then Fastify's own parser (prototype-poisoning checks);
 * - no other body type is parsed (`text/plain` included): `Content-Type must be application/json`;
 * - a caller that sent `Expect: 100-continue` gets its `100 Continue` here, after authentication and
 *   these checks (http/edge.ts, `handleExpect`).
 */
import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import { JsonShapeScanner, type JsonShapeLimits } from './json-shape-scanner.js';

const BODILESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

function carriesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

function isJson(request: FastifyRequest): boolean {
  const type = request.headers['content-type'];
  return typeof type === 'string' && /^\s*application\/json\s*(;|$)/i.test(type);
}

function expectsContinue(request: FastifyRequest): boolean {
  // Node's own test (`checkContinue` is emitted for the same requests).
  const expect = request.headers.expect;
  return typeof expect === 'string' && /(?:^|\W)100-continue(?:$|\W)/i.test(expect);
}

function refuse(reply: FastifyReply, error: TollgateError): TollgateError {
  // The rest of the body is still on the wire: close the connection rather than read it.
  reply.header('connection', 'close');
  return error;
}

const forbiddenKey = () =>
  new TollgateError(
    'request.invalid_json',
    'Request body contains a forbidden key (__proto__ or constructor.prototype)',
  );

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export function registerJsonBody(app: FastifyInstance, limits: JsonShapeLimits): void {
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!carriesBody(request)) return payload;
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      throw refuse(
        reply,
        new TollgateError(
          'request.unsupported_encoding',
          'Content-Encoding is not supported: send the request body uncompressed (identity)',
        ),
      );
    }
    // The route's guard has passed (onRequest): now the body is wanted (edge.ts, `handleExpect`) — by
    // the JSON parser below, or a route's own (the secret-scanning endpoint takes any type).
    if (expectsContinue(request)) reply.raw.writeContinue();
    if (!isJson(request)) return payload;
    const scanner = new JsonShapeScanner(limits);
    const scanned = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        const problem = scanner.feed(chunk);
        if (problem === null) callback(null, chunk);
        else callback(refuse(reply, new TollgateError('request.invalid_json', problem)));
      },
    });
    // Not `pipeline`: refusing must not destroy the request (its socket carries our answer).
    payload.on('error', (error) => scanned.destroy(error));
    return payload.pipe(scanned);
  });

  const parseJson = app.getDefaultJsonParser('error', 'error');
  // JSON only: a text/plain body was read as a string and refused field by field (415 → invalid_json now).
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // No route reads a body on these methods: a client that sends its JSON Content-Type on every
    // request (a session-wide default) with nothing after it sent no body.
    if (bytes.length === 0 && BODILESS_METHODS.has(request.method)) {
      done(null, undefined);
      return;
    }
    if (!isUtf8(bytes)) {
      done(new TollgateError('request.invalid_json', 'Request body is not valid UTF-8'), undefined);
      return;
    }
    const text = bytes.toString('utf8');
    parseJson(request, text, (error, parsed) => {
      if (error === null) return done(null, parsed);
      // Fastify says only "invalid": valid JSON refused here carries a prototype key.
      done(parsesAsJson(text) ? forbiddenKey() : error, undefined);
    });
  });
}
