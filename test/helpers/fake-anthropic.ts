/**
 * A tiny Anthropic Messages API on a real node:http server, for integration tests. What it does is
 * chosen by the model name: `…-429` answers rate_limit_error with retry-after, `…-529`
 * overloaded_error; otherwise it answers (whole or as SSE) with text, or with a tool_use when the
 * request offers tools and has no tool result yet. Every request is recorded for assertions.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_ANTHROPIC_KEY = 'sk-ant-fake-key';
export const FAKE_CLAUDE_TEXT = 'Hello from fake Claude.';
export const FAKE_CLAUDE_TOOL_ANSWER = 'It is 18°C in Paris.';
/** Usage of every answer: input 20 + cache reads 4 → 24 prompt tokens, 4 of them cached. */
export const FAKE_CLAUDE_USAGE = {
  input_tokens: 20,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 4,
  output_tokens: 9,
};

export interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface FakeUpstream {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

type Block = Record<string, unknown>;

export async function startFakeAnthropic(): Promise<FakeUpstream> {
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
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(path: string, headers: IncomingHttpHeaders, body: Record<string, unknown>, res: ServerResponse): void {
  if (path !== '/v1/messages') return sendError(res, 404, 'not_found_error', `Unknown path ${path}`);
  if (headers['x-api-key'] !== FAKE_ANTHROPIC_KEY)
    return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
  if (headers['anthropic-version'] !== '2023-06-01')
    return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
  if (typeof body.max_tokens !== 'number')
    return sendError(res, 400, 'invalid_request_error', 'max_tokens: Field required');
  const model = String(body.model);
  if (model.endsWith('-429'))
    return sendError(res, 429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', {
      'retry-after': '7',
    });
  if (model.endsWith('-529')) return sendError(res, 529, 'overloaded_error', 'Overloaded');
  const content = replyContent(body);
  const stopReason = content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
  if (body.stream === true) return streamMessage(res, model, content, stopReason);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'msg_fake_01',
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: FAKE_CLAUDE_USAGE,
    }),
  );
}

/** A tool call when tools are offered and no result came back yet; text otherwise. */
function replyContent(body: Record<string, unknown>): Block[] {
  const messages = Array.isArray(body.messages) ? (body.messages as { content: Block[] }[]) : [];
  const last = messages.at(-1)?.content ?? [];
  if (last.some((block) => block.type === 'tool_result')) return [{ type: 'text', text: FAKE_CLAUDE_TOOL_ANSWER }];
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    return [
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'toolu_fake_01', name: 'get_weather', input: { location: 'Paris', unit: 'celsius' } },
    ];
  }
  return [{ type: 'text', text: FAKE_CLAUDE_TEXT }];
}

function streamMessage(res: ServerResponse, model: string, content: Block[], stopReason: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const { output_tokens: outputTokens, ...inputUsage } = FAKE_CLAUDE_USAGE;
  send('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_fake_02',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...inputUsage, output_tokens: 1 },
    },
  });
  send('ping', { type: 'ping' });
  for (const [index, block] of content.entries()) {
    if (block.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of String(block.text).split(/(?<= )/))
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    } else {
      send('content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input);
      for (const piece of [json.slice(0, 5), json.slice(5, 17), json.slice(17)])
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: piece },
        });
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  }
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

function sendError(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_fake' }));
}
