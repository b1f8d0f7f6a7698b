/**
 * Billing invariants under concurrency, on both stores (docs/architecture.md "Money", "Durability"): every
 * generation's cost, the key's usage and the account's balance change agree to the nano-USD, and a
 * settled generation is readable as soon as its response ended.
 */
import { Pool, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, parseSse, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const STREAMS = 200;
const NON_STREAMED = 100;

interface Answer {
  id: string;
  /** Cost the caller was told (usage chunk or usage object), nano-USD. */
  cost: number;
}

/** Distinct prompts and lengths, so the costs differ from one request to the next. */
function bodyFor(i: number, model: string): Record<string, unknown> {
  return {
    model,
    messages: [{ role: 'user', content: `request ${i}: ${'word '.repeat(i % 13)}` }],
    max_tokens: 5 + (i % 31),
  };
}

describe.each(STORE_TARGETS)('billing under concurrency ($name)', (target) => {
  let gw: TestGateway;
  let pool: Pool;

  beforeAll(async () => {
    gw = await startTestGateway({ target });
    pool = new Pool(gw.url, { connections: 256, pipelining: 1 });
  });
  afterAll(async () => {
    await pool.close();
    await gw.close();
  });

  async function post(key: string, body: Record<string, unknown>) {
    const response = await request(`${gw.api}/chat/completions`, {
      method: 'POST',
      dispatcher: pool,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
  }

  async function generationCost(id: string, key: string): Promise<number> {
    const response = await request(`${gw.api}/generation?id=${id}`, {
      dispatcher: pool,
      headers: { authorization: `Bearer ${key}` },
    });
    const text = await response.body.text();
    expect(response.statusCode, text).toBe(200);
    return toUnits(JSON.parse(text).data.total_cost);
  }

  async function keyUsage(key: string): Promise<number> {
    const response = await request(`${gw.api}/key`, { dispatcher: pool, headers: { authorization: `Bearer ${key}` } });
    const text = await response.body.text();
    expect(response.statusCode, text).toBe(200);
    return toUnits(JSON.parse(text).data.usage);
  }

  async function streamOnce(key: string, body: Record<string, unknown>): Promise<Answer> {
    const r = await post(key, { ...body, stream: true });
    expect(r.status, r.text).toBe(200);
    const sse = parseSse(r.text);
    expect(sse.done).toBe(true);
    const usageChunks = sse.events.filter((e) => e.usage !== undefined);
    expect(usageChunks).toHaveLength(1);
    expect(sse.events.at(-1)).toBe(usageChunks[0]);
    expect(sse.events.some((e) => e.error !== undefined)).toBe(false);
    const id = String(r.headers['x-generation-id']);
    for (const e of sse.events) expect(e.id).toBe(id);
    return { id, cost: toUnits(usageChunks[0].usage.cost) };
  }

  async function completeOnce(key: string, body: Record<string, unknown>): Promise<Answer> {
    const r = await post(key, body);
    expect(r.status, r.text).toBe(200);
    const json = JSON.parse(r.text);
    expect(json.id).toBe(r.headers['x-generation-id']);
    return { id: json.id as string, cost: toUnits(json.usage.cost) };
  }

  /** Sum of integers (each generation's cost already converted to nano-USD). */
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

  it(`${STREAMS} concurrent streams on one key: generations = key usage = balance change, to the unit`, async () => {
    const accountId = await gw.createAccount(50);
    const { key } = await gw.createKey(accountId);
    const before = await balanceUnits(gw, accountId);

    const answers = await Promise.all(
      Array.from({ length: STREAMS }, (_, i) => streamOnce(key, bodyFor(i, 'test/paced'))),
    );
    expect(new Set(answers.map((a) => a.id)).size).toBe(STREAMS);

    const costs = await Promise.all(answers.map((a) => generationCost(a.id, key)));
    costs.forEach((cost, i) => expect(cost, answers[i]!.id).toBe(answers[i]!.cost));
    for (const cost of costs) expect(cost).toBeGreaterThan(0);
    const total = sum(costs);

    expect(await keyUsage(key)).toBe(total);
    expect(before - (await balanceUnits(gw, accountId))).toBe(total);
  });

  it(`${NON_STREAMED} concurrent non-streamed requests on two keys of one account`, async () => {
    const accountId = await gw.createAccount(50);
    const keys = [(await gw.createKey(accountId)).key, (await gw.createKey(accountId)).key];
    const before = await balanceUnits(gw, accountId);

    const jobs = Array.from({ length: NON_STREAMED }, (_, i) => ({
      key: keys[i % 2]!,
      body: bodyFor(i, i % 3 === 0 ? 'test/paced' : 'test/chat'),
    }));
    const answers = await Promise.all(jobs.map((job) => completeOnce(job.key, job.body)));
    expect(new Set(answers.map((a) => a.id)).size).toBe(NON_STREAMED);

    const costs = await Promise.all(answers.map((a, i) => generationCost(a.id, jobs[i]!.key)));
    costs.forEach((cost, i) => expect(cost, answers[i]!.id).toBe(answers[i]!.cost));
    const perKey = keys.map((k) => sum(costs.filter((_, i) => jobs[i]!.key === k)));

    expect(await keyUsage(keys[0]!)).toBe(perKey[0]);
    expect(await keyUsage(keys[1]!)).toBe(perKey[1]);
    expect(before - (await balanceUnits(gw, accountId))).toBe(sum(costs));
  });

  it('a settled generation is readable the moment its response ended (no polling)', async () => {
    const accountId = await gw.createAccount(10);
    const { key } = await gw.createKey(accountId);
    const checks = Array.from({ length: 40 }, async (_, i) => {
      const body = bodyFor(i, i % 4 === 0 ? 'test/paced' : 'test/chat');
      const answer = i % 2 === 0 ? await streamOnce(key, body) : await completeOnce(key, body);
      // Immediately: one read, no retry.
      expect(await generationCost(answer.id, key)).toBe(answer.cost);
    });
    await Promise.all(checks);
  });
});
