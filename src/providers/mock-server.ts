/**
 * A simulated OpenAI-compatible provider on a real node:http server, for tests, benchmarks and the
 * demo mode. Each request's behavior is scripted (latency, pace, errors, broken streams): see
 * `mock/script.ts` for the model-name and `x-mock-script` header syntax. `POST /v1/moderations`
 * answers like OpenAI's moderation API (`mock/moderation-handler.ts`).
 */
import { boundedTokenCount } from '../core/token-count.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createH2cServer, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { handleChatCompletion, type ChatHandlerContext, type MockProviderStats } from './mock/chat-handler.js';
import { sendJson } from './mock/http-io.js';
import { handleModeration } from './mock/moderation-handler.js';
import { DEFAULT_MOCK_SCRIPT, type MockScript } from './mock/script.js';

export type { MockProviderStats } from './mock/chat-handler.js';
export { MOCK_BEHAVIORS, type MockBehavior, type MockScript } from './mock/script.js';
export { countPromptTokens, mockCompletionText, MOCK_SENTENCE } from './mock/completion-text.js';

export interface MockProviderOptions {
  port?: number; // default 0: any free port
  host?: string; // default 127.0.0.1
  defaults?: Partial<MockScript>; // applied to every request, under model-name and header scripts
  models?: string[]; // ids listed by GET /v1/models; any model id is served regardless
  /** Speak HTTP/2 without TLS (h2c, prior knowledge) instead of HTTP/1.1. */
  http2?: boolean;
}

export interface MockProvider {
  url: string; // base url including /v1, e.g. http://127.0.0.1:43123/v1
  port: number;
  stats: MockProviderStats;
  /** Zeroes the stats and forgets `failFirst` counts. */
  reset(): void;
  /** Stops listening and ends every open connection, hanging and stalled ones included. */
  close(): Promise<void>;
}

export async function startMockProvider(options: MockProviderOptions = {}): Promise<MockProvider> {
  // Loaded here, not at import time: the tokenizer's tables take ~200 ms to load.
  const { countTokens } = await import('gpt-tokenizer');
  const noSpecialTokens = { disallowedSpecial: new Set<string>() }; // count "<|endoftext|>" as text instead of throwing
  const ctx: ChatHandlerContext = {
    defaults: { ...DEFAULT_MOCK_SCRIPT, ...options.defaults },
    // Bounded like the gateway's own estimate: this provider runs inside the demo gateway's process,
    // where one long prompt without spaces would otherwise block every request for minutes.
    countTokens: (text) => boundedTokenCount(text, (slice) => countTokens(slice, noSpecialTokens)),
    stats: { requests: 0, byModel: new Map(), moderations: 0, connections: 0 },
    failCounters: new Map(),
  };
  const models = options.models ?? ['mock/default'];

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    route(req, res, ctx, models).catch(() => {
      if (res.headersSent) res.destroy();
      else
        sendJson(res, 500, {
          error: { message: 'mock provider failed', type: 'server_error', param: null, code: null },
        });
    });
  };
  // noDelay: paced streams write one small chunk at a time; Nagle would batch them.
  const server = options.http2
    ? // The compatibility API's request and response stand in for node:http's: what the handlers use
      // (headers, body events, writeHead/write/end, destroy, `socket`, whose destroy/end act on the
      // request's stream) behaves alike, a reset or a dropped answer ending one stream, not the connection.
      createH2cServer((req, res) => handle(req as unknown as IncomingMessage, res as unknown as ServerResponse))
    : createServer({ noDelay: true, keepAliveTimeout: 65_000 }, handle);
  const sessions = new Set<Http2Session>();
  if (options.http2) {
    const h2 = server as ReturnType<typeof createH2cServer>;
    h2.on('session', (session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
    });
  }
  server.on('connection', () => ctx.stats.connections++);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  return {
    url: `http://${urlHost(host)}:${port}/v1`,
    port,
    stats: ctx.stats,
    reset() {
      ctx.stats.requests = 0;
      ctx.stats.moderations = 0;
      ctx.stats.connections = 0;
      ctx.stats.byModel.clear();
      ctx.failCounters.clear();
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const session of sessions) session.destroy();
      });
      return closing;
    },
  };
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ChatHandlerContext,
  models: string[],
): Promise<void> {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path === '/v1/chat/completions') {
    if (req.method === 'POST') return handleChatCompletion(req, res, ctx);
    return sendJson(res, 405, invalidUrl(req), { allow: 'POST' });
  }
  if (path === '/v1/moderations') {
    if (req.method === 'POST') return handleModeration(req, res, ctx);
    return sendJson(res, 405, invalidUrl(req), { allow: 'POST' });
  }
  if (path === '/v1/models') {
    if (req.method !== 'GET') return sendJson(res, 405, invalidUrl(req), { allow: 'GET' });
    const data = models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'tollgate-mock' }));
    return sendJson(res, 200, { object: 'list', data });
  }
  sendJson(res, 404, invalidUrl(req));
}

/** OpenAI's answer to an unknown route. */
function invalidUrl(req: IncomingMessage): unknown {
  return {
    error: {
      message: `Invalid URL (${req.method ?? 'GET'} ${req.url ?? '/'})`,
      type: 'invalid_request_error',
      param: null,
      code: null,
    },
  };
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
