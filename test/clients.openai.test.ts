/**
 * The official `openai` client against Tollgate with only the base URL changed (docs/api.md: real clients
 * must work unmodified). Responses are parsed by the client itself; errors must map to its classes.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const messages = [{ role: 'user' as const, content: 'Say hello' }];

/** The usage object as Tollgate sends it: OpenAI's fields plus OpenRouter's `cost` and `is_byok`. */
type UsageWithCost = OpenAI.CompletionUsage & { cost?: unknown; is_byok?: unknown };
type ApiError = InstanceType<typeof OpenAI.APIError>;

describe('openai client', () => {
  let gw: TestGateway;
  let client: OpenAI;
  let brokeKey: string;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    const { key } = await gw.createKey(await gw.createAccount(10));
    client = new OpenAI({ baseURL: gw.api, apiKey: key, maxRetries: 0 });
    brokeKey = (await gw.createKey(await gw.createAccount(0))).key;
  });
  afterAll(() => gw?.close());

  it('creates a non-streamed completion', async () => {
    const { data: completion, response } = await client.chat.completions
      .create({ model: 'test/chat', messages })
      .withResponse();
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^gen-/);
    expect(response.headers.get('x-generation-id')).toBe(completion.id);
    expect(completion.model).toBe('test/chat');
    const choice = completion.choices[0]!;
    expect(choice.message.role).toBe('assistant');
    expect(typeof choice.message.content).toBe('string');
    expect(choice.message.content!.length).toBeGreaterThan(0);
    expect(choice.finish_reason).toBe('stop');
    const usage = completion.usage as UsageWithCost;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(typeof usage.cost).toBe('number');
    expect(usage.cost as number).toBeGreaterThan(0);
  });

  it('streams a completion: one id, content in order, then a usage chunk with cost', async () => {
    const stream = await client.chat.completions.create({ model: 'test/chat', messages, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^gen-/);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);

    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text.length).toBeGreaterThan(0);
    const finishing = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishing.map((c) => c.choices[0]!.finish_reason)).toEqual(['stop']);

    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    const usage = last.usage as UsageWithCost;
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(typeof usage.cost).toBe('number');
  });

  it('matches the streamed text of the same generation with the non-streamed one (deterministic mock)', async () => {
    const plain = await client.chat.completions.create({ model: 'test/chat', messages, seed: 1 });
    const stream = await client.chat.completions.create({ model: 'test/chat', messages, seed: 1, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(plain.choices[0]!.message.content);
  });

  it('surfaces a provider failure mid-stream as an APIError from the iterator', async () => {
    const stream = await client.chat.completions.create({ model: 'test/drop', messages, stream: true });
    const received: string[] = [];
    const failure = await (async () => {
      try {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(received.join('').length).toBeGreaterThan(0);
  });

  it('maps a bad key to AuthenticationError (401)', async () => {
    const bad = new OpenAI({ baseURL: gw.api, apiKey: 'sk-tg-v1-not-a-real-key', maxRetries: 0 });
    const error = await bad.chat.completions.create({ model: 'test/chat', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as ApiError).status).toBe(401);
  });

  it('maps an unknown model to BadRequestError (400) with the contract message', async () => {
    const error = await client.chat.completions.create({ model: 'nobody/nothing', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).message).toContain('nobody/nothing is not a valid model ID');
  });

  it('maps insufficient credits to an APIError with status 402', async () => {
    const broke = new OpenAI({ baseURL: gw.api, apiKey: brokeKey, maxRetries: 0 });
    const error = await broke.chat.completions.create({ model: 'test/chat', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as ApiError).status).toBe(402);
    // The streaming call fails the same way before any stream starts.
    const streamed = await broke.chat.completions
      .create({ model: 'test/chat', messages, stream: true })
      .catch((e: unknown) => e);
    expect((streamed as ApiError).status).toBe(402);
  });

  it('maps an upstream rate limit to RateLimitError (429)', async () => {
    const error = await client.chat.completions
      .create({ model: 'test/rate-limited', messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as ApiError).status).toBe(429);
  });

  it('lists models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain('test/chat');
    expect(ids).toContain('test/chat:free');
  });
});
