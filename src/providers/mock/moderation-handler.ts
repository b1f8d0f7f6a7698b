/**
 * POST /v1/moderations of the mock provider, shaped like OpenAI's moderation API:
 *   {input: string | string[] | [{type:"text", text}, ...], model?} → {id, model, results: [{flagged, categories, category_scores}]}
 * One result per input string (a multi-part input is one input). An input containing the marker
 * `mock-flag:<category>` (e.g. `mock-flag:violence`) is flagged for that category; several markers
 * flag several categories. The model name and `x-mock-script` header script latency, `status` and
 * the `reset`/`hang` behaviors like chat requests (`omni-moderation-latest@status=503`).
 * A request without an `Authorization` header is refused with 401, like OpenAI.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord } from '../json-shape.js';
import { closeSignal, firstHeader, pause, readBody, sendJson } from './http-io.js';
import { parseHeaderScript, parseModelScript, type MockScript } from './script.js';
import { openAiErrorBody } from './wire.js';

/** OpenAI's moderation categories (omni-moderation). */
export const MODERATION_CATEGORIES = [
  'harassment',
  'harassment/threatening',
  'hate',
  'hate/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/instructions',
  'self-harm/intent',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
] as const;

const MARKER = /mock-flag:([a-z][a-z/-]*)/g;

export interface ModerationHandlerContext {
  defaults: MockScript;
  stats: { moderations: number };
}

export async function handleModeration(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ModerationHandlerContext,
): Promise<void> {
  const signal = closeSignal(res);
  ctx.stats.moderations += 1;
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return sendJson(res, 400, invalid('We could not parse the JSON body of your request.'));
  }
  if (!firstHeader(req.headers.authorization)) {
    return sendJson(res, 401, {
      error: { message: "You didn't provide an API key.", type: 'invalid_request_error', param: null, code: null },
    });
  }
  const inputs = isRecord(body) ? inputsOf(body.input) : null;
  if (inputs === null)
    return sendJson(
      res,
      400,
      invalid("Invalid 'input': expected a string, an array of strings, or an array of content parts."),
    );
  const model = isRecord(body) && typeof body.model === 'string' ? body.model : 'omni-moderation-latest';

  const fromModel = parseModelScript(model);
  const header = firstHeader(req.headers['x-mock-script']);
  const fromHeader = header === null ? { ok: true as const, script: {} } : parseHeaderScript(header);
  if (!fromModel.ok || !fromHeader.ok)
    return sendJson(
      res,
      400,
      invalid(`mock: ${!fromModel.ok ? fromModel.error : !fromHeader.ok ? fromHeader.error : ''}`),
    );
  const script: MockScript = { ...ctx.defaults, ...fromModel.script, ...fromHeader.script };

  try {
    await pause(script.latencyMs, signal);
  } catch {
    return; // the client left
  }
  if (script.behavior === 'reset') return void req.socket.destroy();
  if (script.behavior === 'hang') return;
  const name = model.split('@', 1)[0] ?? model;
  if (script.status !== null)
    return sendJson(
      res,
      script.status,
      openAiErrorBody(script.status, name, { code: script.errorCode, message: script.errorMessage }),
    );
  sendJson(res, 200, {
    id: `modr-${randomUUID().replaceAll('-', '').slice(0, 24)}`,
    model: name,
    results: inputs.map(resultOf),
  });
}

/** The inputs to judge, one string each; null when the shape is wrong. */
function inputsOf(input: unknown): string[] | null {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((item) => typeof item === 'string')) return input as string[];
  if (input.every((part) => isRecord(part) && typeof part.type === 'string')) {
    return [input.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('\n')];
  }
  return null;
}

function resultOf(text: string) {
  const hits = new Set([...text.matchAll(MARKER)].map((m) => m[1] ?? ''));
  const names = [...new Set<string>([...MODERATION_CATEGORIES, ...hits])];
  return {
    flagged: hits.size > 0,
    categories: Object.fromEntries(names.map((c) => [c, hits.has(c)])),
    category_scores: Object.fromEntries(names.map((c) => [c, hits.has(c) ? 0.97 : 0.0001])),
    category_applied_input_types: Object.fromEntries(names.map((c) => [c, ['text']])),
  };
}

function invalid(message: string): unknown {
  return { error: { message, type: 'invalid_request_error', param: null, code: null } };
}
