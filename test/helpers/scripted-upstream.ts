/**
 * A scripted OpenAI-compatible upstream (tests): its streamed answer is a script chosen by the
 * upstream model name; `startGatewayWith` puts a real test gateway in front of it.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './gateway.js';
import { sqliteTarget } from './store-targets.js';

/** Write some text; pause; or leave the response open (nothing more is written). */
export type Step = { write: string } | { wait: number } | { hang: true };
/** The steps of one answer; given the request body the gateway sent. */
export type Script = (body: Record<string, unknown>) => Step[];

/** One request the upstream served: when its response closed, and whether its script ran to the end. */
export interface UpstreamLog {
  closedAt: number | null;
  finishedWriting: boolean;
}

export interface ScriptedUpstream {
  url: string;
  scripts: Map<string, Script>;
  logs: Map<string, UpstreamLog[]>;
  close(): Promise<void>;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const scripts = new Map<string, Script>();
  const logs = new Map<string, UpstreamLog[]>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', async () => {
      const body = JSON.parse(raw || '{}');
      const script = scripts.get(body.model);
      const log: UpstreamLog = { closedAt: null, finishedWriting: false };
      logs.set(body.model, [...(logs.get(body.model) ?? []), log]);
      res.on('close', () => (log.closedAt = Date.now()));
      if (!script) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no script ${body.model}` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const step of script(body)) {
        if (res.destroyed) return;
        if ('write' in step) {
          if (!res.write(step.write)) {
            await new Promise<void>((r) => {
              const done = () => {
                res.off('drain', done);
                res.off('close', done);
                r();
              };
              res.on('drain', done);
              res.on('close', done);
            });
          }
        } else if ('wait' in step) await new Promise((r) => setTimeout(r, step.wait));
        else if ('hang' in step) return;
      }
      log.finishedWriting = true;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    scripts,
    logs,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const ID = 'chatcmpl-up';

/** An OpenAI-style chunk as OpenAI writes it. */
export function chunk(
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) {
  return `data: ${JSON.stringify({
    id: ID,
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'up-model',
    system_fingerprint: 'fp_up',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    usage: null,
    ...extra,
  })}\n\n`;
}

export function usageChunk(prompt = 10, completion = 5) {
  const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  return chunk({}, null, { choices: [], usage });
}

export const DONE = 'data: [DONE]\n\n';

export async function startGatewayWith(
  upstream: ScriptedUpstream,
  models: string[],
  options: {
    idleMs?: number;
    supportedParameters?: string[];
    /** Default 8192. */
    contextLength?: number;
    /** Default 1024; null: none (the completion budget is 4096 or the context left). */
    maxCompletionTokens?: number | null;
    bodyLimitBytes?: number;
  } = {},
): Promise<TestGateway> {
  return startTestGateway({
    target: sqliteTarget,
    configure: (file) => {
      if (options.bodyLimitBytes !== undefined) file.server.body_limit_bytes = options.bodyLimitBytes;
      file.providers.push({
        id: 'scripted',
        name: 'Scripted',
        kind: 'openai',
        base_url: upstream.url,
        api_key: 'k',
        timeouts: { connect_ms: 2000, first_token_ms: 5000, idle_ms: options.idleMs ?? 5000, response_ms: 60_000 },
      });
      for (const m of models)
        (file.models as unknown[]).push({
          id: `scripted/${m}`,
          name: m,
          context_length: options.contextLength ?? 8192,
          endpoints: [
            {
              provider: 'scripted',
              model: m,
              pricing: { prompt: '0.000001', completion: '0.000002' },
              ...(options.maxCompletionTokens === null
                ? {}
                : { max_completion_tokens: options.maxCompletionTokens ?? 1024 }),
              ...(options.supportedParameters ? { supported_parameters: options.supportedParameters } : {}),
            },
          ],
        });
    },
  });
}

/**
 * A caller that streams `model` and closes its connection once the text received so far contains
 * `seen` (after `afterMs`, when given); resolves the generation id at that point.
 */
export function streamAndLeave(
  gw: TestGateway,
  key: string,
  model: string,
  seen: string,
  afterMs = 0,
): Promise<string> {
  return new Promise<string>((resolve) => {
    const req = httpRequest(
      `${gw.api}/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        let leaving = false;
        res.setEncoding('utf8');
        res.on('data', (t: string) => {
          text += t;
          if (leaving || !text.includes(seen)) return;
          leaving = true;
          if (afterMs > 0) setTimeout(() => req.destroy(), afterMs);
          else req.destroy();
          resolve(String(res.headers['x-generation-id']));
        });
        res.on('error', () => undefined);
      },
    );
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream: true }));
  });
}
