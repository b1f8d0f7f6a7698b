/**
 * An error event inside a 200 stream, after the first tokens, from an OpenAI-compatible upstream that
 * puts an HTTP-like code in it: the in-band error chunk says what happened in the words and with the
 * status the same failure gets before the first byte (outside check: a rate limit came as code 502, and
 * a server error as "HTTP 500", though no HTTP 5xx was ever sent).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const ERRORS: Record<string, Record<string, unknown>> = {
  server: { code: 500, message: 'db=postgres://admin:pw@10.0.0.5/prod', type: 'server_error' },
  limited: { code: 429, message: 'Rate limit reached for requests', type: 'rate_limit_exceeded' },
  // vLLM's error event for a prompt past the model's length (a bad request, as the same error before the first byte).
  overflow: {
    object: 'error',
    message: 'The decoder prompt (length 5000) is longer than the maximum model length of 4096.',
    type: 'BadRequestError',
    param: null,
    code: 400,
  },
};

describe('an error event after the first tokens', () => {
  let upstream: Server;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const which = (JSON.parse(body) as { model: string }).model;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const word of ['one ', 'two ', 'three '])
          res.write(
            `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: which, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })}\n\n`,
          );
        res.end(`data: ${JSON.stringify({ error: ERRORS[which] })}\n\n`);
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ id: 'erring', name: 'Erring', kind: 'openai', base_url: url, timeouts: {} });
        for (const which of Object.keys(ERRORS))
          file.models.push({
            id: `test/${which}`,
            name: which,
            context_length: 8192,
            endpoints: [{ provider: 'erring', model: which, pricing: { prompt: '0.000001', completion: '0.000001' } }],
          });
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  const errorOf = async (model: string) => {
    const { key } = await gw.createKey(await gw.createAccount(1));
    const s = await chatStream(gw, key, { model, messages: [{ role: 'user', content: 'hi' }] });
    expect(s.status).toBe(200);
    const errors = s.events.filter((e) => e.error !== undefined);
    expect(errors).toHaveLength(1);
    expect(s.raw).not.toContain('postgres://');
    return errors[0].error as { code: number; message: string; metadata: { error_type: string } };
  };

  it('a server error is "server error", not an HTTP status that was never sent', async () => {
    expect(await errorOf('test/server')).toMatchObject({
      code: 502,
      message: 'Provider returned error: server error',
      metadata: { error_type: 'server' },
    });
  });

  it('a rate limit is 429, as before the first byte', async () => {
    expect(await errorOf('test/limited')).toMatchObject({
      code: 429,
      metadata: { error_type: 'rate_limit_exceeded' },
    });
  });

  it("the caller's own fault as the provider judged it (vLLM's context overflow) is 400, as before the first byte", async () => {
    expect(await errorOf('test/overflow')).toMatchObject({
      code: 400,
      message: expect.stringContaining('maximum model length'),
      metadata: { error_type: 'context_length_exceeded' },
    });
  });
});
