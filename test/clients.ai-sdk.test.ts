/**
 * `@openrouter/ai-sdk-provider` with the `ai` SDK against Tollgate with only `baseURL` changed:
 * generateText / streamText produce text, usage and OpenRouter's provider metadata (cost, provider),
 * and gateway errors surface as the AI SDK's APICallError.
 */
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { APICallError, generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const prompt = 'Say hello';

interface OpenRouterMetadata {
  provider?: string;
  usage?: { cost?: number; promptTokens?: number; completionTokens?: number };
}

describe('@openrouter/ai-sdk-provider + ai', () => {
  let gw: TestGateway;
  let openrouter: ReturnType<typeof createOpenRouter>;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    const { key } = await gw.createKey(await gw.createAccount(10));
    openrouter = createOpenRouter({ baseURL: gw.api, apiKey: key });
  });
  afterAll(() => gw?.close());

  it('generateText: text, usage, cost and provider', async () => {
    const result = await generateText({ model: openrouter('test/chat'), prompt, maxRetries: 0 });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.usage.totalTokens).toBe(result.usage.inputTokens! + result.usage.outputTokens!);
    expect(result.response.id).toMatch(/^gen-/);
    expect(result.response.modelId).toBe('test/chat');
    const meta = result.providerMetadata?.openrouter as OpenRouterMetadata | undefined;
    expect(meta?.provider).toBe('Mock');
    expect(meta?.usage?.cost).toBeGreaterThan(0);
  });

  it('streamText with .chat(): text deltas, usage, cost', async () => {
    const result = streamText({ model: openrouter.chat('test/chat'), prompt, maxRetries: 0 });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(1);
    const text = await result.text;
    expect(text).toBe(deltas.join(''));
    expect(text.length).toBeGreaterThan(0);
    expect(await result.finishReason).toBe('stop');
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    const meta = (await result.providerMetadata)?.openrouter as OpenRouterMetadata | undefined;
    expect(meta?.usage?.cost).toBeGreaterThan(0);
    expect((await result.response).id).toMatch(/^gen-/);
  });

  it('streamText: a provider failure mid-stream ends with finish reason "error"', async () => {
    const errors: unknown[] = [];
    const result = streamText({
      model: openrouter('test/drop'),
      prompt,
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text.length).toBeGreaterThan(0);
    expect(await result.finishReason).toBe('error');
    // The in-band error record reaches the caller as an error part.
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 502, metadata: { error_type: 'provider_unavailable' } });
  });

  it('surfaces a bad key (401) as APICallError', async () => {
    const bad = createOpenRouter({ baseURL: gw.api, apiKey: 'sk-tg-v1-not-a-real-key' });
    const error = await generateText({ model: bad('test/chat'), prompt, maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(401);
    expect((error as APICallError).isRetryable).toBe(false);

    const streamErrors: unknown[] = [];
    const streamed = streamText({
      model: bad('test/chat'),
      prompt,
      maxRetries: 0,
      onError: ({ error: e }) => void streamErrors.push(e),
    });
    for await (const _delta of streamed.textStream) {
      // no text expected
    }
    expect(streamErrors).toHaveLength(1);
    expect(APICallError.isInstance(streamErrors[0])).toBe(true);
    expect((streamErrors[0] as APICallError).statusCode).toBe(401);
  });

  it('surfaces an unknown model (400) as a non-retryable APICallError with the gateway message', async () => {
    const error = await generateText({ model: openrouter('nobody/nothing'), prompt, maxRetries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(400);
    expect((error as APICallError).message).toContain('nobody/nothing is not a valid model ID');
  });
});
