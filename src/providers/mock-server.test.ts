import { countTokens } from 'gpt-tokenizer';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SseParser } from '../streaming/sse-parser.js';
import { countPromptTokens, mockCompletionText, startMockProvider, type MockProvider } from './mock-server.js';
import { openAiAdapter } from './openai/adapter.js';
import type { StreamEvent } from './types.js';

const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Say something about foxes, please.' }], name: 'alice' },
];
const PROMPT_TOKENS = countPromptTokens(MESSAGES, (text) => countTokens(text));

let provider: MockProvider;

beforeAll(async () => {
  provider = await startMockProvider();
});
afterAll(async () => {
  await provider.close();
});
beforeEach(() => {
  provider.reset();
});

interface PostOptions {
  headers?: Record<string, string>;
  headersTimeout?: number;
  bodyTimeout?: number;
}

async function post(body: Record<string, unknown>, options: PostOptions = {}) {
  return request(`${provider.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify({ messages: MESSAGES, ...body }),
    headersTimeout: options.headersTimeout,
    bodyTimeout: options.bodyTimeout,
  });
}

async function complete(model: string, extra: Record<string, unknown> = {}, options: PostOptions = {}) {
  const res = await post({ model, ...extra }, options);
  return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as Record<string, unknown> };
}

interface StreamResult {
  status: number;
  events: StreamEvent[]; // as the OpenAI adapter reads them
  data: string[]; // raw SSE data, in order
  error: Error | null; // how the body ended, if not cleanly
  arrivals: number[]; // ms since the request started, per event
}

async function stream(
  model: string,
  extra: Record<string, unknown> = {},
  options: PostOptions = {},
): Promise<StreamResult> {
  const started = performance.now();
  const res = await post({ model, stream: true, stream_options: { include_usage: true }, ...extra }, options);
  const parser = new SseParser();
  const result: StreamResult = { status: res.statusCode, events: [], data: [], error: null, arrivals: [] };
  const take = (events: { data: string; event: string | null }[]) => {
    for (const e of events) {
      result.data.push(e.data);
      result.events.push(openAiAdapter.parseStreamEvent(e.data, e.event));
      result.arrivals.push(performance.now() - started);
    }
  };
  try {
    for await (const chunk of res.body) take(parser.push(chunk as Buffer));
    take(parser.end());
  } catch (error) {
    result.error = error as Error;
  }
  return result;
}

function contentOf(events: StreamEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.kind !== 'chunk') continue;
    for (const c of e.choices) if (typeof c.delta.content === 'string') text += c.delta.content;
  }
  return text;
}

function contentChunkCount(events: StreamEvent[]): number {
  return events.filter(
    (e) => e.kind === 'chunk' && e.choices.some((c) => typeof c.delta.content === 'string' && c.delta.content !== ''),
  ).length;
}

describe('mock provider: non-streamed completions', () => {
  it('answers like OpenAI, with deterministic text and counted usage', async () => {
    const { status, json } = await complete('mock/default');
    expect(status).toBe(200);
    expect(json).toMatchObject({
      object: 'chat.completion',
      model: 'mock/default',
      system_fingerprint: expect.any(String) as string,
      choices: [{ index: 0, message: { role: 'assistant', content: mockCompletionText(40) }, finish_reason: 'stop' }],
      usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 40, total_tokens: PROMPT_TOKENS + 40 },
    });
    expect(json.id).toMatch(/^chatcmpl-[0-9a-f]{29}$/);
    expect(typeof json.created).toBe('number');
    const parsed = openAiAdapter.parseResponse(json);
    expect('kind' in parsed ? parsed.reason : parsed.usage).toEqual({
      promptTokens: PROMPT_TOKENS,
      completionTokens: 40,
      reasoningTokens: 0,
      cachedTokens: 0,
    });
  });

  it('counts prompt tokens like OpenAI: 3 per message, content, name, 3 for the reply', () => {
    const expected =
      3 +
      (3 + countTokens('You are terse.')) +
      (3 + countTokens('Say something about foxes, please.') + 1 + countTokens('alice'));
    expect(PROMPT_TOKENS).toBe(expected);
  });

  it('stops at max_tokens with finish_reason length; max_completion_tokens wins', async () => {
    const capped = await complete('mock/default', { max_tokens: 5 });
    expect(capped.json).toMatchObject({
      choices: [{ message: { content: 'The quick brown fox jumps' }, finish_reason: 'length' }],
      usage: { completion_tokens: 5 },
    });
    const both = await complete('mock/default', { max_tokens: 5, max_completion_tokens: 2 });
    expect(both.json).toMatchObject({ choices: [{ message: { content: 'The quick' }, finish_reason: 'length' }] });
    const roomy = await complete('mock/default', { max_tokens: 100 });
    expect(roomy.json).toMatchObject({ choices: [{ finish_reason: 'stop' }], usage: { completion_tokens: 40 } });
  });

  it('takes scripted content and length from the model name and the header', async () => {
    const fromModel = await complete('mock/x@content=Hello%2C%20world!,usage=false');
    expect(fromModel.json).toMatchObject({
      choices: [{ message: { content: 'Hello, world!' }, finish_reason: 'stop' }],
    });
    expect(fromModel.json).not.toHaveProperty('usage');
    const fromHeader = await complete(
      'gpt-4o',
      {},
      { headers: { 'x-mock-script': JSON.stringify({ completionTokens: 3 }) } },
    );
    expect(fromHeader.json).toMatchObject({
      model: 'gpt-4o',
      choices: [{ message: { content: 'The quick brown' } }],
      usage: { completion_tokens: 3 },
    });
    const shortForm = await complete('mock/tokens=2');
    expect(shortForm.json).toMatchObject({ choices: [{ message: { content: 'The quick' } }] });
  });

  it('lets the header override the model name', async () => {
    const { json } = await complete(
      'mock/x@content=from-model',
      {},
      { headers: { 'x-mock-script': '{"content":"from header"}' } },
    );
    expect(json).toMatchObject({ choices: [{ message: { content: 'from header' } }] });
  });

  it('truncates scripted content at max_tokens', async () => {
    const { json } = await complete(
      'mock/x',
      { max_tokens: 2 },
      { headers: { 'x-mock-script': '{"content":"one two three"}' } },
    );
    expect(json).toMatchObject({
      choices: [{ message: { content: 'one two' }, finish_reason: 'length' }],
      usage: { completion_tokens: 2 },
    });
  });
});

describe('mock provider: scripted errors', () => {
  it('returns a 429 with retry hints that the adapter classifies', async () => {
    const res = await complete('mock/x@status=429,retry_after=2');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.headers['retry-after-ms']).toBe('2000');
    expect(res.json).toMatchObject({
      error: {
        type: 'requests',
        code: 'rate_limit_exceeded',
        message: expect.stringContaining('Rate limit reached') as string,
      },
    });
    const failure = openAiAdapter.classifyError(res.status, res.headers, JSON.stringify(res.json));
    expect(failure).toMatchObject({ type: 'rate_limited', providerCode: 'rate_limit_exceeded', retryAfterMs: 2000 });
  });

  it('overrides the error code and message', async () => {
    const script = { status: 503, errorCode: 'overloaded', errorMessage: 'busy, busy' };
    const res = await complete('mock/x', {}, { headers: { 'x-mock-script': JSON.stringify(script) } });
    expect(res.status).toBe(503);
    expect(res.json).toEqual({
      error: { message: 'busy, busy', type: 'server_error', param: null, code: 'overloaded' },
    });
  });

  it('rejects for context length and content policy in OpenAI format', async () => {
    const ctx = await complete('mock/x@behavior=context_length');
    expect(ctx.status).toBe(400);
    expect(openAiAdapter.classifyError(400, ctx.headers, JSON.stringify(ctx.json)).type).toBe(
      'context_length_exceeded',
    );
    const policy = await complete('mock/x@behavior=content_policy');
    expect(policy.status).toBe(400);
    expect(openAiAdapter.classifyError(400, policy.headers, JSON.stringify(policy.json))).toMatchObject({
      type: 'content_policy',
      providerCode: 'content_policy_violation',
    });
  });

  it('resets the connection before headers', async () => {
    await expect(post({ model: 'mock/x@behavior=reset' })).rejects.toThrow();
    expect(provider.stats.requests).toBe(1);
  });

  it('hangs without answering', async () => {
    await expect(post({ model: 'mock/x@behavior=hang' }, { headersTimeout: 150 })).rejects.toMatchObject({
      code: 'UND_ERR_HEADERS_TIMEOUT',
    });
  });

  it('waits latencyMs before answering an error', async () => {
    const started = performance.now();
    const res = await complete('mock/x@latency=120,status=500');
    expect(res.status).toBe(500);
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('rejects an invalid script with a 400 that names the problem', async () => {
    const cases: [string, Record<string, string>][] = [
      ['mock/x@latncy=5', {}],
      ['mock/x@behavior=explode', {}],
      ['mock/x@tps=-1', {}],
      ['mock/x@novalue', {}],
      ['mock/x', { 'x-mock-script': 'not json' }],
      ['mock/x', { 'x-mock-script': '{"usage":"maybe"}' }],
    ];
    for (const [model, headers] of cases) {
      const res = await complete(model, {}, { headers });
      expect(res.status, model).toBe(400);
      expect(res.json, model).toMatchObject({
        error: { code: 'mock_script_invalid', message: expect.stringMatching(/^mock: /) as string },
      });
    }
  });

  it('rejects a body that is not a chat request', async () => {
    const noModel = await request(`${provider.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ messages: MESSAGES }),
    });
    expect(noModel.statusCode).toBe(400);
    await noModel.body.dump();
    const noMessages = await request(`${provider.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [] }),
    });
    expect(noMessages.statusCode).toBe(400);
    await noMessages.body.dump();
    const notJson = await request(`${provider.url}/chat/completions`, { method: 'POST', body: '{' });
    expect(notJson.statusCode).toBe(400);
    await notJson.body.dump();
  });
});

describe('mock provider: failFirst', () => {
  it('fails the first N requests with the status, then succeeds', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await complete('mock/flaky@status=500,fail_first=2')).status);
    expect(statuses).toEqual([500, 500, 200, 200]);
  });

  it('fails with 500 when no status or failing behavior is given', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) statuses.push((await complete('mock/flaky2@fail_first=1')).status);
    expect(statuses).toEqual([500, 200]);
  });

  it('applies a failing behavior first: reset once, then healthy', async () => {
    await expect(post({ model: 'mock/flaky3@behavior=reset,fail_first=1' })).rejects.toThrow();
    expect((await complete('mock/flaky3@behavior=reset,fail_first=1')).status).toBe(200);
  });

  it('counts per model and header script, and reset() forgets the counts', async () => {
    const header = { 'x-mock-script': '{"failFirst":1,"status":429}' };
    expect((await complete('mock/a', {}, { headers: header })).status).toBe(429);
    expect((await complete('mock/b', {}, { headers: header })).status).toBe(429);
    expect((await complete('mock/a', {}, { headers: header })).status).toBe(200);
    provider.reset();
    expect((await complete('mock/a', {}, { headers: header })).status).toBe(429);
  });
});

describe('mock provider: streaming', () => {
  it('streams role, content, finish, usage and [DONE] in order, all with one id', async () => {
    const result = await stream('mock/default', { max_tokens: 6 });
    expect(result.status).toBe(200);
    expect(result.error).toBeNull();
    const kinds = result.events.map((e) => e.kind);
    expect(kinds).toEqual([...Array<string>(9).fill('chunk'), 'done']);
    const [first, ...rest] = result.events;
    expect(first).toMatchObject({
      kind: 'chunk',
      choices: [{ delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    expect(contentOf(result.events)).toBe('The quick brown fox jumps over');
    expect(contentChunkCount(result.events)).toBe(6);
    expect(rest[6]).toMatchObject({ kind: 'chunk', choices: [{ delta: {}, finish_reason: 'length' }], usage: null });
    expect(rest[7]).toMatchObject({
      kind: 'chunk',
      choices: [],
      usage: { promptTokens: PROMPT_TOKENS, completionTokens: 6 },
    });
    const ids = new Set(result.data.slice(0, -1).map((d) => (JSON.parse(d) as { id: string }).id));
    expect(ids.size).toBe(1);
  });

  it('sends no usage chunk unless asked, or when the script says usage=false', async () => {
    const unasked = await stream('mock/default', { stream_options: undefined, max_tokens: 2 });
    expect(unasked.data.some((d) => d.includes('"usage"'))).toBe(false);
    expect(unasked.events.at(-1)).toEqual({ kind: 'done' });
    const off = await stream('mock/x@usage=false', { max_tokens: 2 });
    expect(off.data.some((d) => d.includes('"usage"'))).toBe(false);
  });

  it('paces tokens at tokensPerSecond after latency and ttft', async () => {
    const result = await stream('mock/x@latency=60,ttft=60,tps=50,tokens=6');
    expect(contentOf(result.events)).toBe(mockCompletionText(6));
    const firstContent = result.arrivals[1]!;
    const lastContent = result.arrivals[6]!;
    expect(firstContent).toBeGreaterThanOrEqual(100); // latency + ttft
    expect(lastContent - firstContent).toBeGreaterThanOrEqual(80); // 5 gaps of 20 ms
    for (let i = 1; i < result.arrivals.length; i++)
      expect(result.arrivals[i]!).toBeGreaterThanOrEqual(result.arrivals[i - 1]!);
  });

  it('sends headers before ttft elapses', async () => {
    const started = performance.now();
    const res = await post({ model: 'mock/x@ttft=300', stream: true });
    expect(performance.now() - started).toBeLessThan(250);
    await res.body.text();
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
  });

  it('stall: streams breakAfter tokens, then goes silent with the connection open', async () => {
    const result = await stream('mock/x@behavior=stall,break_after=2,tps=200', {}, { bodyTimeout: 200 });
    expect(result.error).toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
    expect(contentOf(result.events)).toBe('The quick');
    expect(result.events.some((e) => e.kind === 'done')).toBe(false);
  });

  it('drop: streams breakAfter tokens, then closes the connection mid-stream', async () => {
    const result = await stream('mock/x@behavior=drop');
    expect(result.error).not.toBeNull();
    expect(contentOf(result.events)).toBe('The quick brown');
    expect(result.events.some((e) => e.kind === 'done')).toBe(false);
  });

  it('drop: works when paced too', async () => {
    const result = await stream('mock/x@behavior=drop,tps=200,break_after=1');
    expect(result.error).not.toBeNull();
    expect(contentOf(result.events)).toBe('The');
  });

  it('malformed: one invalid JSON event mid-stream, then the stream carries on', async () => {
    const result = await stream('mock/x@behavior=malformed,tokens=5');
    expect(result.error).toBeNull();
    expect(result.events.filter((e) => e.kind === 'malformed')).toHaveLength(1);
    expect(result.events.findIndex((e) => e.kind === 'malformed')).toBe(4); // role + 3 tokens, then the bad one
    expect(contentOf(result.events)).toBe(mockCompletionText(5));
    expect(result.events.at(-1)).toEqual({ kind: 'done' });
  });

  it('no_done: ends cleanly after usage without [DONE]', async () => {
    const result = await stream('mock/x@behavior=no_done,tokens=3');
    expect(result.error).toBeNull();
    expect(result.events.at(-1)).toMatchObject({ kind: 'chunk', choices: [], usage: { completionTokens: 3 } });
    expect(result.data).not.toContain('[DONE]');
  });

  it('stream_error: an in-band OpenAI error after breakAfter tokens, then the end', async () => {
    const result = await stream('mock/x@behavior=stream_error,break_after=1');
    expect(result.error).toBeNull();
    expect(contentOf(result.events)).toBe('The');
    expect(result.events.at(-1)).toMatchObject({
      kind: 'error',
      failure: { type: 'server', providerCode: 'server_error' },
    });
  });

  it('fails before headers with scripted statuses, streamed or not', async () => {
    const result = await stream('mock/x@status=502');
    expect(result.status).toBe(502);
  });

  it('keeps streaming other requests while one stalls', async () => {
    const stalled = stream('mock/x@behavior=stall', {}, { bodyTimeout: 300 });
    const healthy = await stream('mock/x@tokens=3');
    expect(contentOf(healthy.events)).toBe('The quick brown');
    expect((await stalled).error).not.toBeNull();
  });

  it('keeps serving after a client leaves mid-stream', async () => {
    const controller = new AbortController();
    const res = await request(`${provider.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'mock/x@tps=20,tokens=1000', messages: MESSAGES, stream: true }),
      signal: controller.signal,
    });
    for await (const _chunk of res.body) {
      controller.abort();
      break;
    }
    const next = await stream('mock/x@tokens=2');
    expect(contentOf(next.events)).toBe('The quick');
  });
});

describe('mock provider: non-streamed broken responses', () => {
  it('malformed: a complete 200 whose JSON is cut short', async () => {
    const res = await post({ model: 'mock/x@behavior=malformed' });
    expect(res.statusCode).toBe(200);
    const text = await res.body.text();
    expect(() => JSON.parse(text) as unknown).toThrow();
  });

  it('drop: headers and part of the body, then the connection closes', async () => {
    const res = await post({ model: 'mock/x@behavior=drop' });
    expect(res.statusCode).toBe(200);
    await expect(res.body.text()).rejects.toThrow();
  });

  it('stall: headers and part of the body, then silence', async () => {
    const res = await post({ model: 'mock/x@behavior=stall' }, { bodyTimeout: 150 });
    expect(res.statusCode).toBe(200);
    await expect(res.body.text()).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
  });
});

describe('mock provider: server', () => {
  it('lists models', async () => {
    const res = await request(`${provider.url}/models`);
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({
      object: 'list',
      data: [{ id: 'mock/default', object: 'model', created: 1_700_000_000, owned_by: 'tollgate-mock' }],
    });
  });

  it('answers unknown routes and methods like OpenAI', async () => {
    const missing = await request(`${provider.url}/embeddings`, { method: 'POST', body: '{}' });
    expect(missing.statusCode).toBe(404);
    expect(await missing.body.json()).toMatchObject({ error: { message: 'Invalid URL (POST /v1/embeddings)' } });
    const wrongMethod = await request(`${provider.url}/chat/completions`);
    expect(wrongMethod.statusCode).toBe(405);
    await wrongMethod.body.dump();
  });

  it('counts requests by model', async () => {
    await complete('mock/a');
    await complete('mock/a');
    await stream('mock/b');
    expect(provider.stats.requests).toBe(3);
    expect([...provider.stats.byModel]).toEqual([
      ['mock/a', 2],
      ['mock/b', 1],
    ]);
    provider.reset();
    expect(provider.stats.requests).toBe(0);
    expect(provider.stats.byModel.size).toBe(0);
  });

  it('applies defaults from its options, under model-name scripts', async () => {
    const custom = await startMockProvider({ defaults: { content: 'default text', status: null }, models: ['m/one'] });
    try {
      const res = await request(`${custom.url}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: MESSAGES }),
      });
      expect(await res.body.json()).toMatchObject({ choices: [{ message: { content: 'default text' } }] });
      const over = await request(`${custom.url}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm@content=mine', messages: MESSAGES }),
      });
      expect(await over.body.json()).toMatchObject({ choices: [{ message: { content: 'mine' } }] });
      expect(custom.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    } finally {
      await custom.close();
    }
  });

  it('closes promptly with hanging and stalled connections open', async () => {
    const other = await startMockProvider();
    const hanging = request(`${other.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'mock/x@behavior=hang', messages: MESSAGES }),
    });
    const stalled = await request(`${other.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'mock/x@behavior=stall', messages: MESSAGES, stream: true }),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await other.close();
    expect(performance.now() - started).toBeLessThan(1_000);
    await expect(hanging).rejects.toThrow();
    await expect(stalled.body.text()).rejects.toThrow();
    await other.close(); // idempotent
  });
});
