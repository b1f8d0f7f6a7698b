/**
 * A loopback upstream for tests of the native adapters: one node:http server that answers Anthropic
 * (`POST /v1/messages`, model in the body) and Gemini (`/v1beta/models/{model}:…`) requests with
 * a script chosen by the model name. Steps write raw SSE text, set a status, wait, hang (leave the
 * response open) or reset the socket. Every request is recorded.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type testCatalog, type TestGateway } from './gateway.js';
import { sqliteTarget } from './store-targets.js';

export type Step =
  string | { status: number; headers?: Record<string, string> } | { wait: number } | { hang: true } | { reset: true };

export interface ScriptedProvider {
  url: string;
  scripts: Map<string, (body: Record<string, unknown>) => Step[]>;
  requests: { model: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export async function startScriptedProvider(): Promise<ScriptedProvider> {
  const scripts: ScriptedProvider['scripts'] = new Map();
  const requests: ScriptedProvider['requests'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      const gemini = /\/models\/([^/:]+):/.exec(req.url ?? '');
      const model = gemini ? gemini[1]! : String(body.model);
      requests.push({ model, body });
      const script = scripts.get(model);
      if (!script) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `no script ${model}` } }));
        return;
      }
      void play(res, script(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    scripts,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function play(res: ServerResponse, steps: Step[]): Promise<void> {
  for (const step of steps) {
    if (res.destroyed) return;
    if (typeof step === 'string') {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(step);
    } else if ('status' in step) {
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    } else if ('wait' in step) {
      await new Promise((resolve) => setTimeout(resolve, step.wait));
    } else if ('hang' in step) {
      return;
    } else {
      res.socket?.destroy();
      return;
    }
  }
  res.end();
}

/** Anthropic SSE events as the Messages API writes them. */
export const anthropicSse = {
  event: (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`,
  start: (usage: Record<string, unknown> = { input_tokens: 12, output_tokens: 1 }) =>
    anthropicSse.event('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_scripted',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    }),
  textStart: (index: number) =>
    anthropicSse.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'text', text: '' },
    }),
  text: (index: number, text: string) =>
    anthropicSse.event('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'text_delta', text },
    }),
  blockStop: (index: number) => anthropicSse.event('content_block_stop', { type: 'content_block_stop', index }),
  messageDelta: (stopReason: string, usage: Record<string, number>) =>
    anthropicSse.event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage,
    }),
  messageStop: () => anthropicSse.event('message_stop', { type: 'message_stop' }),
  ping: () => anthropicSse.event('ping', { type: 'ping' }),
};

/** One Gemini streamGenerateContent?alt=sse event. */
export const geminiSse = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`;

/** One provider of the gateway in front of the scripted upstream. */
export interface NativeProvider {
  id: string;
  kind: 'anthropic' | 'gemini';
  name?: string;
  stream_upstream?: boolean;
}

/** One model of that gateway: its endpoints (upstream model names), at 1000 / 2000 units per token unless priced. */
export interface NativeModel {
  id: string;
  endpoints: {
    provider: string;
    model: string;
    pricing?: {
      prompt: string;
      completion: string;
      input_cache_read?: string;
      input_cache_write?: string;
      input_cache_write_1h?: string;
    };
    supports_prefill?: boolean;
  }[];
}

const PRICES = { prompt: '0.000001', completion: '0.000002' };

/** A test gateway (embedded store) whose providers are Anthropic or Gemini endpoints of `upstream`. */
export function startNativeGateway(
  upstream: ScriptedProvider,
  options: {
    providers: NativeProvider[];
    models: NativeModel[];
    timeouts: Record<string, number>;
    configure?: (file: ReturnType<typeof testCatalog>) => void;
  },
): Promise<TestGateway> {
  return startTestGateway({
    target: sqliteTarget,
    configure: (file) => {
      for (const p of options.providers)
        file.providers.push({
          id: p.id,
          name: p.name ?? p.id,
          kind: p.kind,
          base_url: p.kind === 'gemini' ? `${upstream.url}/v1beta` : upstream.url,
          api_key: `${p.kind}-key-${p.id}`,
          timeouts: options.timeouts,
          ...(p.stream_upstream === undefined ? {} : { stream_upstream: p.stream_upstream }),
        });
      for (const m of options.models)
        (file.models as unknown[]).push({
          id: m.id,
          name: m.id,
          context_length: 100_000,
          endpoints: m.endpoints.map((e) => ({ pricing: PRICES, ...e })),
        });
      options.configure?.(file);
    },
  });
}
