/**
 * The official `@openrouter/sdk` against Tollgate with only `serverURL` changed. The SDK validates
 * every response against its zod schemas (required-nullable fields must be present, enums and
 * integer types must match), so each call here is also a schema check of the gateway's renderers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const messages = [{ role: 'user' as const, content: 'Say hello' }];
const NO_RETRIES = { strategy: 'none' } as const;

/** Rethrows the SDK's response validation failure with the offending fields spelled out. */
async function valid<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof errors.ResponseValidationError)
      throw new Error(`SDK rejected the gateway's response: ${error.pretty()}`);
    throw error;
  }
}

/** Reads a streamed `chat.send` to the end; a chunk the SDK rejects ends it with that error. */
async function collect(
  result: ChatResult | AsyncIterable<ChatStreamChunk>,
): Promise<{ chunks: ChatStreamChunk[]; error: unknown }> {
  if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a non-streamed result');
  const stream: AsyncIterable<ChatStreamChunk> = result;
  const chunks: ChatStreamChunk[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks, error: null };
  } catch (error) {
    return { chunks, error };
  }
}

/**
 * An OpenAI-compatible upstream that streams one token and then reports an in-band error with a
 * numeric code, as OpenRouter-style upstreams do (the mock provider only sends string codes).
 */
async function startNumericErrorUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'raw' };
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] })}\n\n`,
      );
      res.write(`data: ${JSON.stringify({ error: { code: 502, message: 'Upstream overloaded' } })}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

describe('@openrouter/sdk', () => {
  let gw: TestGateway;
  let upstream: { server: Server; url: string };
  let accountId: string;
  let key: string;
  let sdk: OpenRouter;
  let manager: OpenRouter;
  beforeAll(async () => {
    upstream = await startNumericErrorUpstream();
    gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => {
        file.providers.push({ ...file.providers[0]!, id: 'raw', name: 'Raw', base_url: upstream.url });
      },
      extraModels: [
        // Also the one model with a tokenizer, so both shapes of a Model's architecture are validated.
        {
          id: 'test/stream-error',
          name: 'stream error',
          tokenizer: 'GPT',
          instruct_type: 'chatml',
          context_length: 8192,
          endpoints: [
            {
              provider: 'mock',
              model: 'mock@behavior=stream_error,breakAfter=2',
              pricing: { prompt: '0.000001', completion: '0.000002' },
            },
          ],
        },
        {
          id: 'test/numeric-stream-error',
          name: 'numeric stream error',
          context_length: 8192,
          endpoints: [{ provider: 'raw', model: 'raw', pricing: { prompt: '0.000001', completion: '0.000002' } }],
        },
      ],
    });
    accountId = await gw.createAccount(10, 'purchase');
    key = (await gw.createKey(accountId)).key;
    sdk = new OpenRouter({ apiKey: key, serverURL: gw.api, retryConfig: NO_RETRIES });
    manager = new OpenRouter({
      apiKey: (await gw.createKey(accountId, { management: true })).key,
      serverURL: gw.api,
      retryConfig: NO_RETRIES,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((resolve) => upstream?.server.close(resolve));
  });

  it('reads the current key', async () => {
    const { data } = await valid(sdk.apiKeys.getCurrentKeyMetadata());
    expect(data.label).toMatch(/^sk-tg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/);
    expect(data.isManagementKey).toBe(false);
    expect(data.isFreeTier).toBe(false);
    expect(data.limit).toBeNull();
    expect(data.freeModelDailyRequests.limit).toBe(1000);
    const managed = await valid(manager.apiKeys.getCurrentKeyMetadata());
    expect(managed.data.isManagementKey).toBe(true);
  });

  it('reads credits', async () => {
    const { data } = await valid(sdk.credits.getCredits());
    expect(data.totalCredits).toBe(10);
    expect(typeof data.totalUsage).toBe('number');
  });

  it('sends a non-streamed chat and looks its generation up by id', async () => {
    const result = await valid(sdk.chat.send({ chatRequest: { model: 'test/chat', messages } }));
    if (!('choices' in result)) throw new Error('expected a non-streamed result');
    expect(result.id).toMatch(/^gen-/);
    expect(result.model).toBe('test/chat');
    const choice = result.choices[0]!;
    expect(choice.finishReason).toBe('stop');
    expect(typeof choice.message.content).toBe('string');
    expect(result.usage?.totalTokens).toBe((result.usage?.promptTokens ?? 0) + (result.usage?.completionTokens ?? 0));
    expect(result.usage?.cost).toBeGreaterThan(0);

    const { data } = await valid(sdk.generations.getGeneration({ id: result.id }));
    expect(data.id).toBe(result.id);
    expect(data.model).toBe('test/chat');
    expect(data.streamed).toBe(false);
    expect(data.totalCost).toBe(result.usage?.cost);
    expect(data.tokensCompletion).toBe(result.usage?.completionTokens);
    expect(data.providerResponses?.length).toBeGreaterThan(0);
  });

  it('streams a chat: shared id, content, finish, usage chunk with cost', async () => {
    const stream = await valid(sdk.chat.send({ chatRequest: { model: 'test/chat', messages, stream: true } }));
    const { chunks, error } = await collect(stream);
    if (error instanceof Error) throw error;
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('').length).toBeGreaterThan(0);
    expect(chunks.filter((c) => c.choices[0]?.finishReason).map((c) => c.choices[0]!.finishReason)).toEqual(['stop']);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.cost).toBeGreaterThan(0);

    const { data } = await valid(sdk.generations.getGeneration({ id: last.id }));
    expect(data.streamed).toBe(true);
  });

  it('parses an in-band stream error chunk (finish_reason "error")', async () => {
    for (const model of ['test/stream-error', 'test/drop', 'test/numeric-stream-error']) {
      const stream = await valid(sdk.chat.send({ chatRequest: { model, messages, stream: true } }));
      const { chunks, error } = await collect(stream);
      expect(error, `${model}: ${String(error)}`).toBeNull();
      const last = chunks.at(-1)!;
      expect(last.choices[0]?.finishReason, model).toBe('error');
      expect(last.error?.code, model).toBeGreaterThanOrEqual(400);
      expect(typeof last.error?.metadata?.errorType, model).toBe('string');
      if (model === 'test/numeric-stream-error') expect(last.error?.metadata?.providerCode).toBe('502');

      // The failed generation is recorded and readable too.
      const { data } = await valid(sdk.generations.getGeneration({ id: last.id }));
      expect(data.streamed).toBe(true);
    }
  });

  it('looks up a failed-over generation with one provider response per attempt', async () => {
    const result = await valid(sdk.chat.send({ chatRequest: { model: 'test/failover', messages } }));
    if (!('choices' in result)) throw new Error('expected a non-streamed result');
    const { data } = await valid(sdk.generations.getGeneration({ id: result.id }));
    expect(data.providerName).toBe('Mock B');
    expect(data.providerResponses?.map((r) => r.status)).toEqual([503, 200]);
  });

  it('looks up a generation whose usage the gateway had to estimate (upstream reported none)', async () => {
    const stream = await valid(sdk.chat.send({ chatRequest: { model: 'test/no-usage', messages, stream: true } }));
    const { chunks, error } = await collect(stream);
    if (error instanceof Error) throw error;
    const usage = chunks.at(-1)?.usage;
    expect(usage?.completionTokens).toBeGreaterThan(0);
    const { data } = await valid(sdk.generations.getGeneration({ id: chunks[0]!.id }));
    expect(data.tokensCompletion).toBe(usage?.completionTokens);
  });

  it('lists models, model endpoints (percent-encoded variant) and providers', async () => {
    const models = await valid(sdk.models.list());
    const ids = models.result.data.map((m) => m.id);
    expect(ids).toContain('test/chat');
    expect(models.result.totalCount).toBe(ids.length);
    const tokenized = models.result.data.find((m) => m.id === 'test/stream-error');
    expect(tokenized?.architecture.tokenizer).toBe('GPT');
    expect(tokenized?.architecture.instructType).toBe('chatml');

    const endpoints = await valid(sdk.endpoints.list({ author: 'test', slug: 'chat:free' }));
    expect(endpoints.data.id).toBe('test/chat:free');
    expect(endpoints.data.endpoints[0]?.pricing.prompt).toBe('0');
    const failover = await valid(sdk.endpoints.list({ author: 'test', slug: 'failover' }));
    expect(failover.data.endpoints.map((e) => e.tag)).toEqual(['mock', 'mock-b']);

    const providers = await valid(sdk.providers.list());
    expect(providers.data.map((p) => p.slug)).toEqual(expect.arrayContaining(['mock', 'mock-b']));
  });

  it('counts models, gets one, lists those a key may use, filters by parameter, lists ZDR endpoints (404s before)', async () => {
    const all = (await valid(sdk.models.list())).result.data;
    expect((await valid(sdk.models.count())).data.count).toBe(all.length);
    const one = await valid(sdk.models.get({ author: 'test', slug: 'chat' }));
    expect(one.data.id).toBe('test/chat');
    expect(one.data.pricing.prompt).toBe(all.find((m) => m.id === 'test/chat')?.pricing.prompt);
    // The SDK sends this call's key itself (`security`), not the client's.
    const mine = await valid(sdk.models.listForUser({ bearer: key }));
    expect(mine.result.data.map((m) => m.id)).toEqual(all.map((m) => m.id));
    // Every model lists `temperature`; none lists a parameter nobody has.
    const filtered = await valid(sdk.models.list({ supportedParameters: 'temperature' }));
    expect(filtered.result.data).toHaveLength(all.length);
    expect((await valid(sdk.models.list({ supportedParameters: 'no_such_parameter' }))).result.data).toEqual([]);
    const zdr = await valid(sdk.endpoints.listZdrEndpoints());
    expect(Array.isArray(zdr.data)).toBe(true);
    // An unknown model is the SDK's not-found error, not a crash.
    await expect(sdk.models.get({ author: 'test', slug: 'nope' })).rejects.toThrow();
  });

  it('lists for a key with allowed models only those models', async () => {
    const limited = await gw.createKey(accountId, { name: 'two models', allowed_models: ['test/chat', 'test/paced'] });
    const client = new OpenRouter({ apiKey: limited.key, serverURL: gw.api });
    const mine = await valid(client.models.listForUser({ bearer: limited.key }));
    expect(mine.result.data.map((m) => m.id).sort()).toEqual(['test/chat', 'test/paced']);
  });

  it('manages keys: create, list, get, update, delete', async () => {
    const created = await valid(
      manager.apiKeys.create({
        requestBody: { name: 'sdk key', limit: 5, limitReset: 'monthly', expiresAt: new Date(Date.now() + 86_400_000) },
      }),
    );
    expect(created.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    const hash = created.data.hash;
    expect(created.data.limit).toBe(5);
    expect(created.data.limitRemaining).toBe(5);
    expect(created.data.limitReset).toBe('monthly');
    expect(created.data.expiresAt).toBeInstanceOf(Date);

    // The new key reads its own limit through GET /key.
    const own = await valid(
      new OpenRouter({
        apiKey: created.key,
        serverURL: gw.api,
        retryConfig: NO_RETRIES,
      }).apiKeys.getCurrentKeyMetadata(),
    );
    expect(own.data.limit).toBe(5);
    expect(own.data.limitRemaining).toBe(5);
    expect(own.data.limitReset).toBe('monthly');
    expect(own.data.expiresAt).toBeInstanceOf(Date);

    const listed = await valid(manager.apiKeys.list());
    expect(listed.data.map((k) => k.hash)).toContain(hash);

    const got = await valid(manager.apiKeys.get({ hash }));
    expect(got.data.name).toBe('sdk key');

    const updated = await valid(
      manager.apiKeys.update({ hash, requestBody: { name: 'renamed', disabled: true, limit: null } }),
    );
    expect(updated.data.name).toBe('renamed');
    expect(updated.data.disabled).toBe(true);
    expect(updated.data.limit).toBeNull();
    expect(updated.data.updatedAt).not.toBeNull();

    const withDisabled = await valid(manager.apiKeys.list({ includeDisabled: true }));
    expect(withDisabled.data.map((k) => k.hash)).toContain(hash);
    const withoutDisabled = await valid(manager.apiKeys.list({ includeDisabled: false }));
    expect(withoutDisabled.data.map((k) => k.hash)).not.toContain(hash);

    const deleted = await valid(manager.apiKeys.delete({ hash }));
    expect(deleted.deleted).toBe(true);
    await expect(manager.apiKeys.get({ hash })).rejects.toBeInstanceOf(errors.NotFoundResponseError);

    // What the SDK sends when its caller names the workspace or the creator: the one workspace, the account.
    const named = await valid(
      manager.apiKeys.create({
        requestBody: { name: 'in workspace', workspaceId: 'default', creatorUserId: created.data.creatorUserId },
      }),
    );
    expect(named.data.workspaceId).toBe('default');
    expect(named.data.creatorUserId).toBe(created.data.creatorUserId);
    // A partner's end user (`external`), shown as the key's `externalUser`; a supplied secret is refused.
    const forUser = await valid(
      manager.apiKeys.create({ requestBody: { name: 'for a user', external: { user: 'u-42' } } }),
    );
    expect(forUser.data.externalUser).toBe('u-42');
    const readBack = await valid(manager.apiKeys.get({ hash: forUser.data.hash }));
    expect(readBack.data.externalUser).toBe('u-42');
    for (const requestBody of [
      { name: 'elsewhere', workspaceId: 'ws_other' },
      { name: 'someone else', creatorUserId: 'user_other' },
      { name: 'own secret', external: { user: 'u-43', apiKey: 'p'.repeat(16) + 'q'.repeat(16) + 'r'.repeat(8) } },
    ])
      await expect(manager.apiKeys.create({ requestBody })).rejects.toBeInstanceOf(errors.BadRequestResponseError);
  });

  it('maps errors to the SDK classes: 401, 402, 400', async () => {
    const bad = new OpenRouter({ apiKey: 'sk-tg-v1-not-a-real-key', serverURL: gw.api, retryConfig: NO_RETRIES });
    const unauthorized = await bad.chat
      .send({ chatRequest: { model: 'test/chat', messages } })
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(errors.UnauthorizedResponseError);
    expect((unauthorized as errors.UnauthorizedResponseError).statusCode).toBe(401);
    expect((unauthorized as errors.UnauthorizedResponseError).error.code).toBe(401);
    await expect(bad.apiKeys.getCurrentKeyMetadata()).rejects.toBeInstanceOf(errors.UnauthorizedResponseError);

    // An inference key on a management route is refused too.
    await expect(sdk.apiKeys.list()).rejects.toBeInstanceOf(errors.UnauthorizedResponseError);

    const broke = new OpenRouter({
      apiKey: (await gw.createKey(await gw.createAccount(0))).key,
      serverURL: gw.api,
      retryConfig: NO_RETRIES,
    });
    const payment = await broke.chat.send({ chatRequest: { model: 'test/chat', messages } }).catch((e: unknown) => e);
    expect(payment).toBeInstanceOf(errors.PaymentRequiredResponseError);
    expect((payment as errors.PaymentRequiredResponseError).error.code).toBe(402);

    const badRequest = await sdk.chat
      .send({ chatRequest: { model: 'nobody/nothing', messages } })
      .catch((e: unknown) => e);
    expect(badRequest).toBeInstanceOf(errors.BadRequestResponseError);
    expect((badRequest as errors.BadRequestResponseError).error.message).toContain(
      'nobody/nothing is not a valid model ID',
    );

    const limited = await sdk.chat
      .send({ chatRequest: { model: 'test/rate-limited', messages } })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(errors.TooManyRequestsResponseError);

    await expect(sdk.endpoints.list({ author: 'nobody', slug: 'nothing' })).rejects.toBeInstanceOf(
      errors.NotFoundResponseError,
    );

    const unknownGeneration = await sdk.generations
      .getGeneration({ id: 'gen-does-not-exist' })
      .catch((e: unknown) => e);
    expect(unknownGeneration).toBeInstanceOf(errors.NotFoundResponseError);
  });
});
