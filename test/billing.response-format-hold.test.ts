/**
 * A structured-output schema is input the provider reads and bills as prompt tokens (OpenAI counts a
 * json_schema in `prompt_tokens`), and every endpoint is sent it: the hold's prompt estimate counts it
 * (billing/token-estimate.ts), as it counts tools. Held at the messages alone, concurrent requests with
 * a large schema were each admitted against a balance their real cost far exceeded, and the account
 * ended past the documented bound −(e − 1 unit) (README, "The overspend bound").
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** An OpenAI-compatible upstream that counts everything it reads as input, as OpenAI does. */
async function startCountingUpstream(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string; messages: unknown; response_format?: unknown };
      const prompt =
        countTokens(JSON.stringify(body.messages)) + countTokens(JSON.stringify(body.response_format ?? ''));
      // Answered after a moment, so the test's requests are in flight together.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-count',
            object: 'chat.completion',
            created: 1,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: '{"a":1}' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 },
          }),
        );
      }, 300);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

describe('response_format and the hold', () => {
  let upstream: { url: string; server: Server };
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startCountingUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'counting',
          name: 'Counting',
          kind: 'openai',
          base_url: upstream.url,
          api_key: 'counting-key',
          stream_upstream: false,
          timeouts: {},
        });
        file.models.push({
          id: 'test/structured',
          name: 'structured',
          context_length: 128000,
          endpoints: [
            {
              provider: 'counting',
              model: 'gpt-structured',
              pricing: { prompt: '0.000001', completion: '0.000002' },
              max_completion_tokens: 1024,
            },
          ],
        });
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((resolve) => upstream.server.close(resolve));
  });

  it('a large json_schema is held for: concurrent requests stop at the balance', async () => {
    // Each answer costs ~0.040054 USD (≈ 40,044 prompt tokens at 1e-6, 5 completion tokens at 2e-6).
    const accountId = await gw.createAccount(0.05);
    const { key } = await gw.createKey(accountId);
    // ~40k tokens of schema description; the messages are a few tokens.
    const schema = { type: 'object', description: 'field '.repeat(40_000), properties: { a: { type: 'number' } } };
    const answers = await Promise.all(
      [1, 2, 3].map(() =>
        chat(gw, key, {
          model: 'test/structured',
          messages: [{ role: 'user', content: 'fill it' }],
          max_tokens: 10,
          response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
        }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    // A hold must fit the balance left: one is admitted. Held at the messages alone (~35,000 units each)
    // all three were, and the account ended at −0.07 USD.
    expect(statuses).toEqual([200, 402, 402]);
    const balance = await balanceUnits(gw, accountId);
    expect(balance).toBe(50_000_000 - 40_054_000);
  });
});
