/**
 * POST /api/v1/secret-scanning/verify — a code host's secret-scanning report (docs/api.md). The route
 * lives in its own encapsulated plugin whose only body parser keeps the raw bytes (any content type),
 * because the signature covers exactly those bytes: however the rest of the app parses bodies, this
 * route verifies first and parses JSON itself afterwards.
 */
import type { FastifyInstance } from 'fastify';
import { TollgateError } from '../../core/errors.js';
import { handleScanningReport, scanningReportSchema, type ExposedKeyDeps } from '../../pipeline/exposed-keys.js';
import type { PublicKeyRing } from '../../secret-scanning/public-key-ring.js';
import { isValidReportSignature } from '../../secret-scanning/report-signature.js';
import { parseBody } from '../parse-body.js';
import { z } from 'zod';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';

export interface SecretScanningRouteDeps {
  exposed: ExposedKeyDeps;
  keys: PublicKeyRing;
  maxBodyBytes: number;
  maxTokens: number;
}

function header(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

export function registerSecretScanningRoutes(
  app: FastifyInstance,
  routes: RouteTable,
  deps: SecretScanningRouteDeps,
): void {
  const schema = scanningReportSchema(deps.maxTokens);
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.maxBodyBytes }, (_request, body, done) =>
      done(null, body),
    );

    routes.on(scope).add(
      'POST',
      '/api/v1/secret-scanning/verify',
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const identifier = header(request.headers['github-public-key-identifier']);
        const signature = header(request.headers['github-public-key-signature']);
        const key = identifier && signature ? await deps.keys.find(identifier) : null;
        if (!key || !signature || !isValidReportSignature(raw, signature, key)) {
          request.log.warn(
            {
              key_identifier: identifier?.slice(0, 100) ?? null,
              reason: !identifier || !signature ? 'missing' : key ? 'invalid' : 'unknown key',
            },
            'secret-scanning report refused',
          );
          throw new TollgateError('secret_scanning.invalid_signature', 'Missing, unknown or invalid report signature');
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw.toString('utf8'));
        } catch {
          throw new TollgateError('request.invalid_json', 'Request body is not valid JSON');
        }
        return handleScanningReport(deps.exposed, parseBody(schema, parsed), request.log);
      },
      // The code host authenticates by the signature over the raw body, checked in the handler.
      {
        auth: 'none',
        bodyLimit: deps.maxBodyBytes,
        doc: {
          summary: 'A code host’s report of tokens found in public: Tollgate keys among them are disabled',
          description:
            'The signature (ECDSA P-256, SHA-256) covers the raw body and is checked before it is parsed; the code host’s public keys come from `secret_scanning.keys_url`.',
          tag: 'Secret scanning',
          headers: {
            'Github-Public-Key-Identifier': 'Which of the code host’s keys signed the report',
            'Github-Public-Key-Signature': 'Base64 DER ECDSA signature over the raw body',
          },
          body: schema,
          responses: {
            200: json(
              z.array(
                z.object({
                  token_raw: z.string(),
                  token_type: z.string(),
                  label: z.enum(['true_positive', 'false_positive']),
                }),
              ),
              'One verdict per reported token, in report order',
            ),
          },
        },
      },
    );
  });
}
