/**
 * Checks answers against the OpenAPI document (GET /api/v1/openapi.json): every JSON answer a test
 * gateway gives is validated against the schema its route documents for that status (or the error
 * record), so a response that stops matching the reference fails the suite that saw it.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import type { OpenApiDocument } from '../../src/http/openapi.js';

// ajv-formats is CommonJS (module.exports is the plugin); its types describe the transpiled default.
const addFormats = addFormatsModule as unknown as FormatsPlugin;

type Json = Record<string, unknown>;

export class ResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false });
  private readonly cache = new Map<string, ValidateFunction | null>();

  constructor(private readonly document: OpenApiDocument) {
    addFormats(this.ajv);
    // The components under one id, so `#/components/schemas/X` inside them resolves as in the document.
    this.ajv.addSchema({ $id: BASE, components: { schemas: document.components.schemas } });
  }

  /**
   * Null when the answer matches, else what is wrong. `route` is the matched URL template
   * (`/api/v1/keys/:hash`), null for an unmatched path (then only the error record fits).
   */
  check(method: string, route: string | null, status: number, contentType: string, body: string): string | null {
    const where = `${method} ${route ?? '(no route)'} → ${status}`;
    const operation = route ? this.operation(method, route) : null;
    if (route && !operation) return `${where}: the route is not in the OpenAPI document`;
    const responses = (operation?.responses ?? {}) as Record<string, Json>;
    const declared = responses[String(status)] ?? (status >= 400 || !operation ? ERROR_RESPONSE : null);
    if (!declared) return `${where}: the status is not documented`;
    const resolved = declared.$ref === '#/components/responses/Error' ? ERROR_RESPONSE : declared;
    const content = (resolved.content ?? {}) as Record<string, Json>;
    const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
    if (!(mediaType in content)) {
      if (Object.keys(content).length === 0 && body.length === 0) return null;
      return `${where}: answered ${mediaType || 'no content type'}, documented ${Object.keys(content).join(', ') || 'no body'}`;
    }
    if (mediaType !== 'application/json') return null;
    const validate = this.validator(`${where}|${mediaType}`, content[mediaType]!.schema as Json);
    if (!validate) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return `${where}: the body is not JSON`;
    }
    if (validate(parsed)) return null;
    return `${where}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body' })} in ${body.slice(0, 300)}`;
  }

  /** One `data:` event of a streamed answer, against the schema its route documents for events. */
  checkEvent(method: string, route: string, data: unknown): string | null {
    const where = `${method} ${route} → event`;
    const responses = (this.operation(method, route)?.responses ?? {}) as Record<string, Json>;
    const stream = ((responses['200']?.content ?? {}) as Record<string, Json>)['text/event-stream'];
    if (!stream) return `${where}: the route documents no event stream`;
    const validate = this.validator(`${where}|events`, stream['x-event-schema'] as Json);
    if (!validate || validate(data)) return null;
    return `${where}: ${this.ajv.errorsText(validate.errors, { dataVar: 'event' })} in ${JSON.stringify(data).slice(0, 300)}`;
  }

  private operation(method: string, route: string): Json | null {
    const path = route.replace(/:([A-Za-z_]+)/g, '{$1}');
    const methods = (this.document.paths[path] ?? {}) as unknown as Record<string, Json>;
    return methods[method.toLowerCase()] ?? null;
  }

  private validator(key: string, schema: Json | undefined): ValidateFunction | null {
    if (!this.cache.has(key)) this.cache.set(key, schema ? this.ajv.compile(retarget(schema)) : null);
    return this.cache.get(key)!;
  }
}

const ERROR_RESPONSE: Json = {
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};

const BASE = 'https://tollgate.invalid/openapi.json';

/** A schema compiled on its own refers to the components through the document's id. */
function retarget(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/components/', `"$ref":"${BASE}#/components/`)) as Json;
}
