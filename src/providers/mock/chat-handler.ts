/**
 * POST /v1/chat/completions of the mock provider: validate, resolve the script, then fail or answer
 * (streamed or not) the way the script says.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { isRecord } from '../json-shape.js';
import {
  countPromptTokens,
  planCompletion,
  stopSequencesOf,
  type CountTokens,
  type PlannedCompletion,
} from './completion-text.js';
import { closeSignal, dropConnection, firstHeader, pause, readBody, sendJson } from './http-io.js';
import { applyFailFirst, parseHeaderScript, parseModelScript, type MockScript } from './script.js';
import {
  ChunkFormatter,
  completionBody,
  contentPolicyBody,
  contextLengthBody,
  openAiErrorBody,
  openAiUsage,
  streamErrorEvent,
  type ResponseIdentity,
} from './wire.js';

export interface MockProviderStats {
  requests: number; // POST /v1/chat/completions received
  byModel: Map<string, number>; // by the `model` string exactly as sent
  moderations: number; // POST /v1/moderations received
  connections: number; // connections accepted (an HTTP/2 connection carries many requests)
}

export interface ChatHandlerContext {
  defaults: MockScript;
  countTokens: CountTokens;
  stats: MockProviderStats;
  /** Requests seen per model + header script, for `failFirst`. */
  failCounters: Map<string, number>;
}

export async function handleChatCompletion(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ChatHandlerContext,
): Promise<void> {
  const signal = closeSignal(res);
  ctx.stats.requests += 1;
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    sendJson(res, 400, invalidRequest('We could not parse the JSON body of your request.'));
    return;
  }
  if (!isRecord(body) || typeof body.model !== 'string') {
    sendJson(res, 400, invalidRequest('you must provide a model parameter'));
    return;
  }
  const model = body.model;
  ctx.stats.byModel.set(model, (ctx.stats.byModel.get(model) ?? 0) + 1);
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    sendJson(res, 400, invalidRequest("Invalid 'messages': expected a non-empty array."));
    return;
  }

  const header = firstHeader(req.headers['x-mock-script']);
  const resolved = resolveScript(ctx.defaults, model, header);
  if (typeof resolved === 'string') {
    sendJson(res, 400, {
      error: { message: `mock: ${resolved}`, type: 'invalid_request_error', param: null, code: 'mock_script_invalid' },
    });
    return;
  }
  const failKey = `${model}\n${header ?? ''}`;
  const seen = ctx.failCounters.get(failKey) ?? 0;
  if (resolved.failFirst > 0) ctx.failCounters.set(failKey, seen + 1);
  const script = applyFailFirst(resolved, seen);

  try {
    await pause(script.latencyMs, signal);
    if (script.behavior === 'reset') {
      req.socket.destroy();
      return;
    }
    if (script.behavior === 'hang') return; // the socket stays open until the client or close() ends it
    const promptTokens = countPromptTokens(body.messages, ctx.countTokens);
    const rejection = scriptedRejection(script, model, promptTokens);
    if (rejection !== null) {
      sendJson(res, rejection.status, rejection.body, rejection.headers);
      return;
    }
    const plan = planCompletion(script, maxTokensOf(body), stopSequencesOf(body.stop));
    const who: ResponseIdentity = {
      id: `chatcmpl-${randomUUID().replaceAll('-', '').slice(0, 29)}`,
      created: Math.floor(Date.now() / 1000),
      model,
    };
    if (body.stream === true) {
      const includeUsage = script.usage && isRecord(body.stream_options) && body.stream_options.include_usage === true;
      await streamCompletion(res, signal, script, plan, who, includeUsage ? promptTokens : null);
    } else {
      await sendCompletion(res, signal, script, plan, who, script.usage ? promptTokens : null);
    }
  } catch (error) {
    if (signal.aborted) return; // the client left; its timers are already cancelled
    throw error;
  }
}

/** The merged script, or why the request's scripting is invalid. */
function resolveScript(defaults: MockScript, model: string, header: string | null): MockScript | string {
  const fromModel = parseModelScript(model);
  if (!fromModel.ok) return fromModel.error;
  const fromHeader = header === null ? { ok: true as const, script: {} } : parseHeaderScript(header);
  if (!fromHeader.ok) return fromHeader.error;
  return { ...defaults, ...fromModel.script, ...fromHeader.script };
}

interface Rejection {
  status: number;
  body: unknown;
  headers: OutgoingHttpHeaders;
}

function scriptedRejection(script: MockScript, model: string, promptTokens: number): Rejection | null {
  const overrides = { code: script.errorCode, message: script.errorMessage };
  const headers: OutgoingHttpHeaders = {};
  if (script.retryAfter !== null) {
    headers['retry-after'] = String(Math.ceil(script.retryAfter));
    headers['retry-after-ms'] = String(Math.round(script.retryAfter * 1000));
  }
  if (script.status !== null)
    return { status: script.status, body: openAiErrorBody(script.status, model, overrides), headers };
  if (script.behavior === 'context_length') return { status: 400, body: contextLengthBody(promptTokens), headers };
  if (script.behavior === 'content_policy') return { status: 400, body: contentPolicyBody(), headers };
  return null;
}

function maxTokensOf(body: Record<string, unknown>): number | null {
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
}

function generationMs(script: MockScript, tokens: number): number {
  return script.tokensPerSecond > 0 ? (tokens * 1000) / script.tokensPerSecond : 0;
}

/** Non-streamed: the whole answer after latency + ttft + generation time, like a real provider. */
async function sendCompletion(
  res: ServerResponse,
  signal: AbortSignal,
  script: MockScript,
  plan: PlannedCompletion,
  who: ResponseIdentity,
  promptTokens: number | null,
): Promise<void> {
  await pause(script.ttftMs + generationMs(script, plan.pieces.length), signal);
  const usage = promptTokens === null ? null : openAiUsage(promptTokens, plan.pieces.length);
  const text = JSON.stringify(completionBody(who, plan.pieces.join(''), plan.finishReason, usage));
  const half = text.slice(0, Math.floor(text.length / 2));
  const headers = { 'content-type': 'application/json', 'x-request-id': `req_${who.id.slice(9)}` };
  switch (script.behavior) {
    case 'stall': // headers and half the body, then silence
      res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(text) });
      res.write(half);
      return;
    case 'drop':
      res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(text) });
      res.write(half);
      dropConnection(res);
      return;
    case 'malformed': // a complete HTTP response whose JSON is cut short
      res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(half) });
      res.end(half);
      return;
    default:
      res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(text) });
      res.end(text);
  }
}

/**
 * Streamed: headers after latency, the role chunk after ttft, then one content chunk per piece at
 * the scripted pace. With no pace everything after the headers goes out in one write.
 */
async function streamCompletion(
  res: ServerResponse,
  signal: AbortSignal,
  script: MockScript,
  plan: PlannedCompletion,
  who: ResponseIdentity,
  promptTokens: number | null,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': `req_${who.id.slice(9)}`,
  });
  res.flushHeaders();
  await pause(script.ttftMs, signal);

  const paced = script.tokensPerSecond > 0;
  const intervalMs = paced ? 1000 / script.tokensPerSecond : 0;
  const pending: string[] = [];
  const flush = (): void => {
    if (pending.length > 0) res.write(pending.join(''));
    pending.length = 0;
  };
  const emit = (event: string): void => {
    pending.push(event);
    if (paced) flush();
  };
  const fmt = new ChunkFormatter(who, promptTokens !== null);
  const strikeAt = Math.min(script.breakAfter, plan.pieces.length);

  emit(fmt.role());
  for (let i = 0; i <= plan.pieces.length; i++) {
    if (i === strikeAt) {
      switch (script.behavior) {
        case 'stall':
          flush();
          return; // never ended: the connection stays open and silent
        case 'drop':
          flush();
          dropConnection(res);
          return;
        case 'stream_error':
          emit(streamErrorEvent(who.model, { code: script.errorCode, message: script.errorMessage }));
          flush();
          res.end();
          return;
        case 'malformed':
          emit(fmt.malformed());
          break;
        default:
          break;
      }
    }
    const piece = plan.pieces[i];
    if (piece === undefined) break;
    if (i > 0) await pause(intervalMs, signal);
    emit(fmt.content(piece));
  }
  emit(fmt.finish(plan.finishReason));
  if (promptTokens !== null) emit(fmt.usage(openAiUsage(promptTokens, plan.pieces.length)));
  if (script.behavior !== 'no_done') emit(fmt.done());
  flush();
  res.end();
}

function invalidRequest(message: string): unknown {
  return { error: { message, type: 'invalid_request_error', param: null, code: null } };
}
