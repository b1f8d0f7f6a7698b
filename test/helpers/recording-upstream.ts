/**
 * A minimal OpenAI-compatible upstream that records the Authorization header of every request and
 * answers 401 to keys listed as rejected — to see which provider key a request was sent with.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordingUpstream {
  url: string;
  seenKeys: string[];
  /** Every request's headers and parsed body, in order. */
  seen: { headers: IncomingHttpHeaders; body: Record<string, unknown> }[];
  rejectKeys: Set<string>;
  close(): Promise<void>;
}

export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const seenKeys: string[] = [];
  const seen: RecordingUpstream['seen'] = [];
  const rejectKeys = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const key = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      seenKeys.push(key);
      seen.push({ headers: req.headers, body: JSON.parse(body || '{}') as Record<string, unknown> });
      if (rejectKeys.has(key)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
          }),
        );
        return;
      }
      const request = JSON.parse(body) as { model: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-rec',
          object: 'chat.completion',
          created: 1,
          model: request.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'recorded' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seenKeys,
    seen,
    rejectKeys,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
