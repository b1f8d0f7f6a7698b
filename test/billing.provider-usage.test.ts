/**
 * What a provider's `usage` does to the charge: a side it did not count readably (`prompt_tokens`
 * missing, negative, not a number, a fraction) is charged at our estimate, as when the whole usage is
 * missing — never as zero; so is a prompt counted as zero tokens, and a completion counted as zero
 * for text the caller got (a buggy or hostile upstream made such answers free); an absurd count (1e30) is charged at the endpoint's bound (four times its context),
 * so the served answer is charged (it used to overflow the store's integer and go uncharged, the
 * caller getting a 500), and `usage.cost` is what was charged.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateCompletionTokens, estimatePromptTokens, promptCeilingOf } from '../src/billing/token-estimate.js';
import {
  balanceUnits,
  chat,
  chatStream,
  getJson,
  startTestGateway,
  toUnits,
  type TestGateway,
} from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

/** An OpenAI-compatible JSON upstream answering with the `usage` set for the upstream model name. */
async function startUsageUpstream(usageFor: Record<string, unknown>): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'up-1',
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
          usage: usageFor[body.model],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

const PRICE = '0.000001'; // 1000 units per token
const MESSAGES = [{ role: 'user', content: 'Summarise the following text. '.repeat(200) }];
const PROMPT_ESTIMATE = estimatePromptTokens(MESSAGES);

const USAGES: Record<string, unknown> = {
  'no-prompt': { completion_tokens: 5, total_tokens: 5 },
  'negative-prompt': { prompt_tokens: -1, completion_tokens: 5, total_tokens: 4 },
  'nan-prompt': { prompt_tokens: 'NaN', completion_tokens: 5, total_tokens: 5 },
  absurd: { prompt_tokens: 10, completion_tokens: 1e30, total_tokens: 1e30 },
  'zero-prompt': { prompt_tokens: 0, completion_tokens: 5, total_tokens: 5 },
  'fraction-prompt': { prompt_tokens: 0.4, completion_tokens: 5, total_tokens: 5 },
  'zero-completion': { prompt_tokens: 1500, completion_tokens: 0, total_tokens: 1500 },
  'fraction-completion': { prompt_tokens: 1500, completion_tokens: 0.4, total_tokens: 1500 },
  'zero-both': { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  'no-prompt-cached': { completion_tokens: 5, total_tokens: 5, prompt_tokens_details: { cached_tokens: 300 } },
  'inflated-prompt': { prompt_tokens: 30_000, completion_tokens: 5, total_tokens: 30_005 },
  'cached-rest': {
    prompt_tokens: 300,
    completion_tokens: 5,
    total_tokens: 305,
    prompt_tokens_details: { cached_tokens: 1200 },
  },
  'cached-only': {
    prompt_tokens: 0,
    completion_tokens: 5,
    total_tokens: 5,
    prompt_tokens_details: { cached_tokens: 1200 },
  },
};
const COMPLETION_ESTIMATE = estimateCompletionTokens('hello there');

describe('provider usage and the charge', () => {
  let upstream: { url: string; server: Server };
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startUsageUpstream(USAGES);
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({
          id: 'usage',
          name: 'Usage',
          kind: 'openai',
          base_url: upstream.url,
          api_key: 'k',
          timeouts: {},
        });
        for (const name of Object.keys(USAGES))
          (file.models as unknown[]).push({
            id: `usage/${name}`,
            name,
            context_length: 8192,
            endpoints: [{ provider: 'usage', model: name, pricing: { prompt: PRICE, completion: PRICE } }],
          });
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await new Promise((resolve) => upstream.server.close(resolve));
  });

  for (const name of ['no-prompt', 'negative-prompt', 'nan-prompt', 'zero-prompt', 'fraction-prompt']) {
    it(`an unreadable prompt_tokens (${name}) charges the prompt estimate, not zero`, async () => {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId);
      const answer = await chat(gw, key, { model: `usage/${name}`, messages: MESSAGES });
      expect(answer.status, answer.text).toBe(200);
      expect(PROMPT_ESTIMATE).toBeGreaterThan(1000);
      // The prompt was sent and processed: it is billed (at the estimate, as when usage is absent).
      expect(answer.json.usage.prompt_tokens).toBe(PROMPT_ESTIMATE);
      expect(toUnits(answer.json.usage.cost)).toBe((PROMPT_ESTIMATE + 5) * 1000);
    });
  }

  for (const name of ['zero-completion', 'fraction-completion']) {
    it(`a completion counted as ${name === 'zero-completion' ? 'zero' : 'a fraction'} for delivered text charges our estimate of it`, async () => {
      const accountId = await gw.createAccount(1);
      const { key } = await gw.createKey(accountId);
      const answer = await chat(gw, key, { model: `usage/${name}`, messages: MESSAGES });
      expect(answer.status, answer.text).toBe(200);
      expect(COMPLETION_ESTIMATE).toBeGreaterThan(0);
      expect(answer.json.usage.completion_tokens).toBe(COMPLETION_ESTIMATE);
      expect(toUnits(answer.json.usage.cost)).toBe((1500 + COMPLETION_ESTIMATE) * 1000);
    });
  }

  it('an answer counted as zero tokens on both sides is charged at the estimates, streamed or not, and says so', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    const expected = (PROMPT_ESTIMATE + COMPLETION_ESTIMATE) * 1000;
    const answer = await chat(gw, key, { model: 'usage/zero-both', messages: MESSAGES });
    expect(answer.status, answer.text).toBe(200);
    expect(toUnits(answer.json.usage.cost)).toBe(expected);
    const generation = await getJson(gw, `/generation?id=${answer.json.id}`, key);
    expect(generation.json.data).toMatchObject({
      tokens_prompt: PROMPT_ESTIMATE,
      tokens_completion: COMPLETION_ESTIMATE,
      usage_estimated: true,
    });
    const streamed = await chatStream(gw, key, { model: 'usage/zero-both', messages: MESSAGES, stream: true });
    expect(streamed.status).toBe(200);
    expect(toUnits(streamed.events.find((e) => e.usage)?.usage.cost)).toBe(expected);
    expect(1_000_000_000 - (await balanceUnits(gw, accountId))).toBe(2 * expected);
  });

  it('a prompt counted as zero beside cached tokens (a server counting only the rest) is charged as the cache count, and reported so', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    const answer = await chat(gw, key, { model: 'usage/cached-only', messages: MESSAGES });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.usage).toMatchObject({ prompt_tokens: 1200, prompt_tokens_details: { cached_tokens: 1200 } });
    expect(toUnits(answer.json.usage.cost)).toBe((1200 + 5) * 1000);
    const generation = await getJson(gw, `/generation?id=${answer.json.id}`, key);
    expect(generation.json.data).toMatchObject({
      tokens_prompt: 1200,
      native_tokens_cached: 1200,
      usage_estimated: false,
    });
  });

  it('cached tokens above prompt_tokens (a server counting only the rest there) are charged as the rest plus the cache', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    const answer = await chat(gw, key, { model: 'usage/cached-rest', messages: MESSAGES });
    expect(answer.status, answer.text).toBe(200);
    // The larger of the two (1200) charged the 300 uncached tokens nothing (outside check).
    expect(answer.json.usage).toMatchObject({ prompt_tokens: 1500, prompt_tokens_details: { cached_tokens: 1200 } });
    expect(toUnits(answer.json.usage.cost)).toBe((1500 + 5) * 1000);
  });

  it('a prompt count past what the request can hold (its bytes + 8,192) is charged at that ceiling; with media, only the context bounds it', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    // Every field of the request counts, the model's name too.
    const ceiling = promptCeilingOf(MESSAGES, { model: 'usage/inflated-prompt' })!;
    expect(ceiling).toBeLessThan(30_000);
    const text = await chat(gw, key, { model: 'usage/inflated-prompt', messages: MESSAGES });
    expect(text.status, text.text).toBe(200);
    // 30,000 for a prompt of ~1,200 was charged as counted, up to four times the context (outside check).
    expect(text.json.usage.prompt_tokens).toBe(ceiling);
    expect(toUnits(text.json.usage.cost)).toBe((ceiling + 5) * 1000);
    // An image's real count can be anything our tokenizer cannot see: the provider's count stands.
    const image = { type: 'image_url', image_url: { url: 'https://example.test/photo.png' } };
    const withImage = await chat(gw, key, {
      model: 'usage/inflated-prompt',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe it.' }, image] }],
    });
    expect(withImage.status, withImage.text).toBe(200);
    expect(withImage.json.usage.prompt_tokens).toBe(30_000);
    // A field beside the messages an endpoint may read as prompt (vLLM's `documents`, rendered by a RAG
    // template) counts towards the ceiling: 100 KB of documents were capped at the messages' bytes.
    const documents = [{ title: 'd1', text: 'The quick brown fox jumps over the lazy dog. '.repeat(2300) }];
    const withDocuments = await chat(gw, key, { model: 'usage/inflated-prompt', messages: MESSAGES, documents });
    expect(withDocuments.status, withDocuments.text).toBe(200);
    expect(withDocuments.json.usage.prompt_tokens).toBe(30_000);
  });

  it('a prompt charged at our estimate reports no cached tokens (none were priced as such)', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    const answer = await chat(gw, key, { model: 'usage/no-prompt-cached', messages: MESSAGES });
    expect(answer.json.usage).toMatchObject({
      prompt_tokens: PROMPT_ESTIMATE,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    expect(toUnits(answer.json.usage.cost)).toBe((PROMPT_ESTIMATE + 5) * 1000);
  });

  it('an absurd completion count (1e30) still charges the served answer, and usage.cost is what was charged', async () => {
    const accountId = await gw.createAccount(1);
    const { key } = await gw.createKey(accountId);
    const answer = await chat(gw, key, { model: 'usage/absurd', messages: MESSAGES });
    // The upstream answered; the answer must reach the caller and be charged (never served for free).
    expect(answer.status, answer.text).toBe(200);
    const charged = 1_000_000_000 - (await balanceUnits(gw, accountId));
    expect(charged).toBeGreaterThan(0);
    expect(toUnits(answer.json.usage.cost)).toBe(charged);
    const generation = await getJson(gw, `/generation?id=${answer.json.id}`, key);
    expect(generation.status).toBe(200);
    expect(toUnits(generation.json.data.total_cost)).toBe(charged);
  });
});
