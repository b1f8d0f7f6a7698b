/**
 * A tiny Gemini API (generateContent, streamGenerateContent?alt=sse) on a real node:http server,
 * for integration tests. What it does is chosen by the model name: `…-429` answers
 * RESOURCE_EXHAUSTED with a RetryInfo delay, `…-503` UNAVAILABLE, `…-400` INVALID_ARGUMENT;
 * otherwise it answers with text, or with a functionCall when the request offers tools and has no
 * functionResponse yet. Every request is recorded for assertions.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeUpstream, RecordedRequest } from './fake-anthropic.js';

export const FAKE_GEMINI_KEY = 'AIza-fake-key';
export const FAKE_GEMINI_TEXT = 'Hello from fake Gemini.';
export const FAKE_GEMINI_TOOL_ANSWER = 'Paris is at 18°C.';
/** Usage of every answer: 30 prompt tokens (10 cached), 8 answer + 5 thinking tokens. */
export const FAKE_GEMINI_USAGE = {
  promptTokenCount: 30,
  candidatesTokenCount: 8,
  thoughtsTokenCount: 5,
  cachedContentTokenCount: 10,
  totalTokenCount: 43,
};

type Part = Record<string, unknown>;

export async function startFakeGemini(): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      answer(req.url ?? '', req.headers, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1beta`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(url: string, headers: IncomingHttpHeaders, body: Record<string, unknown>, res: ServerResponse): void {
  const match = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/.exec(url);
  if (match === null) return sendError(res, 404, 'NOT_FOUND', `Unknown path ${url}`);
  if (headers['x-goog-api-key'] !== FAKE_GEMINI_KEY) {
    return sendError(res, 400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
    ]);
  }
  const model = match[1] ?? '';
  if (model.endsWith('-429')) {
    return sendError(
      res,
      429,
      'RESOURCE_EXHAUSTED',
      'You exceeded your current quota, please check your plan and billing details.',
      [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '9s' }],
    );
  }
  if (model.endsWith('-503'))
    return sendError(res, 503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.');
  if (model.endsWith('-400'))
    return sendError(res, 400, 'INVALID_ARGUMENT', "Invalid value at 'generation_config.temperature'");
  const parts = replyParts(body);
  const meta = { modelVersion: model, responseId: 'fakeResponse01' };
  if (match[2] === 'generateContent') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: FAKE_GEMINI_USAGE,
        ...meta,
      }),
    );
    return;
  }
  if (match[3] === undefined) return sendError(res, 400, 'INVALID_ARGUMENT', 'this fake only streams with alt=sse');
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const { promptTokenCount } = FAKE_GEMINI_USAGE;
  // Text arrives a word at a time; a function call arrives whole; the last event has the finish and full usage.
  const pieces: Part[][] = parts.flatMap((part) =>
    typeof part.text === 'string' ? part.text.split(/(?<= )/).map((text) => [{ text }]) : [[part]],
  );
  for (const [n, piece] of pieces.entries()) {
    const last = n === pieces.length - 1;
    const candidate = { content: { role: 'model', parts: piece }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) };
    const usageMetadata = last ? FAKE_GEMINI_USAGE : { promptTokenCount, totalTokenCount: promptTokenCount };
    res.write(`data: ${JSON.stringify({ candidates: [candidate], usageMetadata, ...meta })}\r\n\r\n`);
  }
  res.end();
}

/** A function call when tools are offered and no result came back yet; text otherwise. */
function replyParts(body: Record<string, unknown>): Part[] {
  const contents = Array.isArray(body.contents) ? (body.contents as { parts: Part[] }[]) : [];
  const last = contents.at(-1)?.parts ?? [];
  if (last.some((part) => part.functionResponse !== undefined)) return [{ text: FAKE_GEMINI_TOOL_ANSWER }];
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    return [
      {
        functionCall: { name: 'get_weather', args: { location: 'Paris', unit: 'celsius' } },
        thoughtSignature: 'fake-signature',
      },
    ];
  }
  return [{ text: FAKE_GEMINI_TEXT }];
}

function sendError(res: ServerResponse, code: number, status: string, message: string, details: unknown[] = []): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code, message, status, ...(details.length > 0 ? { details } : {}) } }));
}
