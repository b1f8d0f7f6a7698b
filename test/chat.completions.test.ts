/**
 * POST /chat/completions without streaming (docs/api.md): the response shape, the exact cost at the
 * catalog's prices, app attribution, estimated usage when the upstream reports none, and the
 * generation record behind it (§3.4).
 */
import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, mockCompletionText } from '../src/providers/mock-server.js';
import { balanceUnits, chat, getJson, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say something about foxes.' },
];

/** Test catalog prices in nano-USD per token: prompt 0.000001, completion 0.000002. */
const PROMPT_UNITS = 1000;
const COMPLETION_UNITS = 2000;

/** Prompt tokens as the simulated provider counts them (OpenAI's chat accounting). */
function upstreamPromptTokens(messages: readonly unknown[]): number {
  return countPromptTokens(messages, (text) => countTokens(text));
}

describe('POST /chat/completions (non-streaming)', () => {
  let gw: TestGateway;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(() => gw.close());

  it('answers with the §2.3 shape, the generation id and the exact cost', async () => {
    const before = await balanceUnits(gw, accountId);
    const startedAt = Math.floor(Date.now() / 1000);
    const r = await chat(gw, key, { model: 'test/chat', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    expect(String(r.headers['content-type'])).toMatch(/^application\/json/);

    const body = r.json;
    const generationId = r.headers['x-generation-id'];
    expect(generationId).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    expect(body.id).toBe(generationId);
    expect(body.object).toBe('chat.completion');
    expect(Number.isInteger(body.created)).toBe(true);
    expect(body.created).toBeGreaterThanOrEqual(startedAt - 1);
    expect(body.created).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
    expect(body.model).toBe('test/chat');
    expect(body.provider).toBe('Mock');
    expect(body).toHaveProperty('system_fingerprint');
    expect(body.system_fingerprint === null || typeof body.system_fingerprint === 'string').toBe(true);

    expect(body.choices).toHaveLength(1);
    const choice = body.choices[0];
    expect(choice.index).toBe(0);
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content).toBe(mockCompletionText(40));
    expect(choice.finish_reason).toBe('stop');

    const usage = body.usage;
    const promptTokens = upstreamPromptTokens(MESSAGES);
    expect(usage.prompt_tokens).toBe(promptTokens);
    expect(usage.completion_tokens).toBe(40);
    expect(usage.total_tokens).toBe(promptTokens + 40);
    for (const field of ['prompt_tokens', 'completion_tokens', 'total_tokens'])
      expect(Number.isInteger(usage[field]), field).toBe(true);
    const expectedUnits = promptTokens * PROMPT_UNITS + 40 * COMPLETION_UNITS;
    expect(typeof usage.cost).toBe('number');
    expect(usage.cost).toBe(expectedUnits / 1e9);
    expect(toUnits(usage.cost)).toBe(expectedUnits);
    expect(usage.is_byok).toBe(false);
    expect(typeof usage.cost_details.upstream_inference_prompt_cost).toBe('number');
    expect(typeof usage.cost_details.upstream_inference_completions_cost).toBe('number');
    expect(toUnits(usage.cost_details.upstream_inference_prompt_cost)).toBe(promptTokens * PROMPT_UNITS);
    expect(toUnits(usage.cost_details.upstream_inference_completions_cost)).toBe(40 * COMPLETION_UNITS);
    if (usage.prompt_tokens_details) expect(typeof usage.prompt_tokens_details.cached_tokens).toBe('number');
    if (usage.completion_tokens_details) expect(typeof usage.completion_tokens_details.reasoning_tokens).toBe('number');

    // The charge is committed before the body is sent: no polling.
    const g = await getJson(gw, `/generation?id=${body.id}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data).toMatchObject({
      id: body.id,
      model: 'test/chat',
      provider_name: 'Mock',
      streamed: false,
      cancelled: false,
      finish_reason: 'stop',
      tokens_prompt: promptTokens,
      tokens_completion: 40,
      usage_estimated: false,
      is_byok: false,
    });
    expect(g.json.data.total_cost).toBe(usage.cost);
    expect(g.json.data.provider_responses).toEqual([
      { provider_name: 'Mock', status: 200, latency: expect.any(Number) },
    ]);
    expect(await balanceUnits(gw, accountId)).toBe(before - expectedUnits);
  });

  it('honours max_tokens: finish_reason "length" and the cost of the tokens produced', async () => {
    const r = await chat(gw, key, { model: 'test/chat', messages: MESSAGES, max_tokens: 5 });
    expect(r.status, r.text).toBe(200);
    expect(r.json.choices[0].message.content).toBe(mockCompletionText(5));
    expect(r.json.choices[0].finish_reason).toBe('length');
    expect(r.json.usage.completion_tokens).toBe(5);
    expect(toUnits(r.json.usage.cost)).toBe(upstreamPromptTokens(MESSAGES) * PROMPT_UNITS + 5 * COMPLETION_UNITS);
  });

  it('records the calling app (HTTP-Referer, X-Service-Title) in the generation', async () => {
    const r = await chat(
      gw,
      key,
      { model: 'test/chat', messages: MESSAGES },
      { 'HTTP-Referer': 'https://app.example.test/chat', 'X-Service-Title': 'Example App' },
    );
    expect(r.status, r.text).toBe(200);
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data.http_referer).toBe('https://app.example.test/chat');
    expect(g.json.data.app_title).toBe('Example App');
  });

  it('accepts X-Title as the app title', async () => {
    const r = await chat(
      gw,
      key,
      { model: 'test/chat', messages: MESSAGES },
      { 'HTTP-Referer': 'https://other.example.test/', 'X-Title': 'Legacy Title' },
    );
    expect(r.status, r.text).toBe(200);
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.json.data.http_referer).toBe('https://other.example.test/');
    expect(g.json.data.app_title).toBe('Legacy Title');
  });

  it('reads UTF-8 title and referer headers as the caller wrote them', async () => {
    // Header bytes are UTF-8 on the wire; Node hands them over as latin1 text.
    const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const r = await chat(
      gw,
      key,
      { model: 'test/chat', messages: MESSAGES },
      { 'HTTP-Referer': wire('https://café.example/'), 'X-Title': wire('Café ☕ App') },
    );
    expect(r.status, r.text).toBe(200);
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.json.data.app_title).toBe('Café ☕ App');
    expect(g.json.data.http_referer).toBe('https://café.example/');
    expect(g.json.data.origin).toBe('https://café.example/');
  });

  it('leaves attribution null when the caller sends none', async () => {
    const r = await chat(gw, key, { model: 'test/chat', messages: MESSAGES });
    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.json.data).toHaveProperty('http_referer', null);
  });

  it('estimates the tokens when the upstream reports no usage, and still charges them', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'test/no-usage', messages: MESSAGES });
    expect(r.status, r.text).toBe(200);
    const content = r.json.choices[0].message.content as string;
    expect(content).toBe(mockCompletionText(40));

    const usage = r.json.usage;
    expect(Number.isInteger(usage.prompt_tokens)).toBe(true);
    expect(Number.isInteger(usage.completion_tokens)).toBe(true);
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.cost).toBeGreaterThan(0);
    expect(toUnits(usage.cost)).toBe(usage.prompt_tokens * PROMPT_UNITS + usage.completion_tokens * COMPLETION_UNITS);

    const g = await getJson(gw, `/generation?id=${r.json.id}`, key);
    expect(g.status).toBe(200);
    expect(g.json.data.usage_estimated).toBe(true);
    expect(g.json.data.tokens_prompt).toBe(usage.prompt_tokens);
    expect(g.json.data.tokens_completion).toBe(usage.completion_tokens);
    expect(g.json.data.total_cost).toBe(usage.cost);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(usage.cost));
  });

  it('renders usage identically in the response, GET /generation and GET /key', async () => {
    const fresh = await gw.createKey(accountId);
    const r1 = await chat(gw, fresh.key, { model: 'test/chat', messages: MESSAGES });
    const r2 = await chat(gw, fresh.key, {
      model: 'test/chat',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 3,
    });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    const keyInfo = await getJson(gw, '/key', fresh.key);
    expect(toUnits(keyInfo.json.data.usage)).toBe(toUnits(r1.json.usage.cost) + toUnits(r2.json.usage.cost));
  });
});
