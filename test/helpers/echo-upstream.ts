/**
 * A careless OpenAI-compatible upstream that echoes the credentials it receives in its errors (its
 * request headers, and the credentials among them in its message), to
 * check that no secret reaches a caller or a log. By model name: `echo-400`, `echo-429`, `echo-502`
 * answer that status with the `Authorization` header in the message and the body; `echo-stream`
 * streams one content chunk, then an in-stream error that echoes it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Secret-shaped strings the upstream adds on its own (not configured anywhere). */
export const ECHO_STRAYS = 'sk-live-0123456789abcdef and AIzaSyA1234567890abcdefghijklmnop';

export interface EchoUpstream {
  url: string;
  close(): Promise<void>;
}

export async function startEchoUpstream(): Promise<EchoUpstream> {
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(text || '{}') as { model?: string };
      const auth = req.headers.authorization ?? '';
      // Credentials an operator put in a provider's extra headers (Azure's `api-key`, a custom scheme).
      const apiKey = req.headers['api-key'] ?? '';
      const schemed = String(req.headers['x-gateway-auth'] ?? '').replace(/^\S+\s+/, '');
      const echo = `rejected credentials "${auth}" ${apiKey} ${schemed} (also ${ECHO_STRAYS})`;
      const status = /^echo-(\d{3})$/.exec(body.model ?? '')?.[1];
      if (status) {
        res.writeHead(Number(status), { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              message: echo,
              type: 'invalid_request_error',
              code: 'echo',
              debug: { headers: req.headers },
            },
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: Record<string, unknown>) => ({
        id: 'chatcmpl-echo',
        object: 'chat.completion.chunk',
        created: 1,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: null }],
      });
      res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: 'Hel' }))}\n\n`);
      res.write(
        `data: ${JSON.stringify({ error: { message: `upstream broke: ${echo}`, code: 502, debug: auth } })}\n\n`,
      );
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
